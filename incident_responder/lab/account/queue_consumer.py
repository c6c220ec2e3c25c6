"""SETUP: ``queue-consumer``: Python, fed by an SQS queue with a dead-letter queue through an event source
mapping."""

from __future__ import annotations

import json
from dataclasses import dataclass

from incident_responder.core.aws import AwsClients
from incident_responder.lab.account.resources import _create_role, _logs_policy
from incident_responder.lab.account.sources import QUEUE_CONSUMER, QUEUE_CONSUMER_SOURCE, deployment_package
from incident_responder.lab.moto_patches.sqs import take_over_queue_polling


@dataclass(frozen=True)
class QueueConsumerResources:
    function_name: str
    function_arn: str
    role_name: str
    queue_name: str
    queue_url: str
    queue_arn: str
    dead_letter_queue_name: str
    dead_letter_queue_url: str
    dead_letter_queue_arn: str
    event_source_mapping_uuid: str
    batch_size: int
    log_group: str


def create_queue_consumer(clients: AwsClients, *, function_name: str = QUEUE_CONSUMER) -> QueueConsumerResources:
    """``queue-consumer``: Python fed by ``<name>-queue`` (redrive to ``<name>-dlq`` after 3 receives) through an
    event source mapping of batch size 10; no reserved concurrency, no VPC. Not idempotent: use a fresh lab."""
    take_over_queue_polling()  # before anything can reach the queue: the lab's emulation polls it, not moto
    account = clients.account_id()
    region = clients.region
    role_name = f"{function_name}-role"
    log_group = f"/aws/lambda/{function_name}"
    batch_size = 10

    sqs = clients.get("sqs")
    dlq_name = f"{function_name}-dlq"
    dlq_url = sqs.create_queue(QueueName=dlq_name, Attributes={"MessageRetentionPeriod": str(14 * 86400)})["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    queue_name = f"{function_name}-queue"
    queue_url = sqs.create_queue(
        QueueName=queue_name,
        Attributes={
            # At least six times the function's timeout, as Lambda recommends for an event source.
            "VisibilityTimeout": "180",
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "3"}),
        },
    )["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    results_url = sqs.create_queue(QueueName=f"{function_name}-results")["QueueUrl"]

    role_arn = _create_role(
        clients,
        role_name,
        {
            "sqs-access": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "ConsumeOwnQueue",
                        "Effect": "Allow",
                        "Action": ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"],
                        "Resource": queue_arn,
                    },
                    {
                        "Sid": "SendResults",
                        "Effect": "Allow",
                        "Action": "sqs:SendMessage",
                        "Resource": f"arn:aws:sqs:{region}:{account}:{function_name}-*",
                    },
                ],
            },
            "cloudwatch-logs": _logs_policy(region, account, log_group),
        },
    )
    clients.get("logs").create_log_group(logGroupName=log_group)

    lam = clients.get("lambda")
    function_arn = lam.create_function(
        FunctionName=function_name,
        Runtime="python3.12",
        Role=role_arn,
        Handler="app.handler",
        Code={"ZipFile": deployment_package("app.py", QUEUE_CONSUMER_SOURCE)},
        Timeout=30,
        MemorySize=256,
        Environment={"Variables": {"RESULTS_QUEUE_URL": results_url}},
    )["FunctionArn"]
    mapping = lam.create_event_source_mapping(
        EventSourceArn=queue_arn, FunctionName=function_name, BatchSize=batch_size, Enabled=True
    )
    return QueueConsumerResources(
        function_name=function_name,
        function_arn=function_arn,
        role_name=role_name,
        queue_name=queue_name,
        queue_url=queue_url,
        queue_arn=queue_arn,
        dead_letter_queue_name=dlq_name,
        dead_letter_queue_url=dlq_url,
        dead_letter_queue_arn=dlq_arn,
        event_source_mapping_uuid=mapping["UUID"],
        batch_size=batch_size,
        log_group=log_group,
    )
