"""EMULATING asynchronous invocation (S3 event notifications invoke ``data-processor`` so): what Lambda does with an
event whose invocation failed.

Lambda queues the event again and retries it, by default twice: one minute after the first attempt, then two
minutes after the second; an event older than the function's ``MaximumEventAgeInSeconds`` is not retried. An event
that fails every attempt (or grows too old) is discarded: ``AsyncEventsDropped``; before that, Lambda sends it to
the function's dead-letter queue and its on-failure destination, with the execution role's permissions. A delivery
that fails (the role may not send, the queue is not there) counts in ``DeadLetterErrors`` or
``DestinationDeliveryFailures``.

The burst's alarm is raised at its end: an event with a retry left is still queued then (its fate comes a minute
later), so only the events given up at once are settled, their later attempts never run in the lab.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from incident_responder.core.aws import AwsClients
from incident_responder.lab.account.sources import INPUT_KEY
from incident_responder.lab.emulation.invocation import AccountView, InvocationOutcome

# Lambda's defaults without an event invoke configuration, and its wait before the first retry.
DEFAULT_RETRY_ATTEMPTS = 2
DEFAULT_MAXIMUM_EVENT_AGE = 21600
FIRST_RETRY_AFTER_SECONDS = 60


def s3_event(bucket: str, region: str) -> dict[str, Any]:
    """The S3 event notification that invoked the function (what a dead-letter queue receives as the message)."""
    return {
        "Records": [
            {
                "eventSource": "aws:s3",
                "awsRegion": region,
                "eventName": "ObjectCreated:Put",
                "s3": {"bucket": {"name": bucket, "arn": f"arn:aws:s3:::{bucket}"}, "object": {"key": INPUT_KEY}},
            }
        ]
    }


def _deliver(clients: AwsClients, view: AccountView, target: str, body: str, attributes: dict[str, Any]) -> bool:
    """Send a failed event where ``target`` (an SQS queue or SNS topic) names, as Lambda does with the role."""
    service, account, name = target.split(":")[2], target.split(":")[4], target.split(":")[-1]
    if service == "sqs":
        if not view.allowed("sqs:SendMessage", target):
            return False
        sqs = clients.get("sqs")
        try:
            url = sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
        except sqs.exceptions.QueueDoesNotExist:
            return False
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageAttributes=attributes)
        return True
    if service == "sns":
        if not view.allowed("sns:Publish", target):
            return False
        sns = clients.get("sns")
        try:
            sns.get_topic_attributes(TopicArn=target)
        except sns.exceptions.NotFoundException:
            return False
        sns.publish(TopicArn=target, Message=body)
        return True
    return False  # another destination type: the lab's functions use none


def settle_failed_events(
    clients: AwsClients, view: AccountView, outcomes: list[InvocationOutcome], start: datetime, event: dict[str, Any]
) -> None:
    """The burst's failed events that Lambda gives up at once (no retry left, or too old for the next one):
    each sent to the dead-letter queue and the on-failure destination, and counted dropped."""
    config = view.config
    retries = DEFAULT_RETRY_ATTEMPTS if config.async_retry_attempts is None else config.async_retry_attempts
    max_age = DEFAULT_MAXIMUM_EVENT_AGE if config.async_max_event_age is None else config.async_max_event_age
    counts = {"AsyncEventsDropped": 0, "DeadLetterErrors": 0, "DestinationDeliveryFailures": 0}
    for outcome in outcomes:
        if outcome.status not in ("failed", "timed_out"):
            continue
        if retries > 0 and max_age >= FIRST_RETRY_AFTER_SECONDS + outcome.duration_ms / 1000:
            continue  # queued again: retried a minute later
        counts["AsyncEventsDropped"] += 1
        if config.dead_letter_target:
            attributes = {
                "RequestID": {"DataType": "String", "StringValue": outcome.request_id},
                "ErrorCode": {"DataType": "Number", "StringValue": "200"},
                "ErrorMessage": {"DataType": "String", "StringValue": (outcome.error_message or "")[:1000]},
            }
            if not _deliver(clients, view, config.dead_letter_target, json.dumps(event), attributes):
                counts["DeadLetterErrors"] += 1
        if config.async_on_failure:
            record = {
                "version": "1.0",
                "requestContext": {
                    "requestId": outcome.request_id,
                    "functionArn": f"{view.raw['FunctionArn']}:$LATEST",
                    "condition": "RetriesExhausted" if retries == 0 else "EventAgeExceeded",
                    "approximateInvokeCount": 1,
                },
                "requestPayload": event,
                "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
                "responsePayload": {"errorType": outcome.error_type, "errorMessage": outcome.error_message},
            }
            if not _deliver(clients, view, config.async_on_failure, json.dumps(record), {}):
                counts["DestinationDeliveryFailures"] += 1
    dims = [{"Name": "FunctionName", "Value": view.config.function_name}]
    data = [
        {"MetricName": name, "Value": value, "Unit": "Count", "Dimensions": dims, "Timestamp": start}
        for name, value in counts.items()
        if value
    ]
    if data:
        clients.get("cloudwatch").put_metric_data(Namespace="AWS/Lambda", MetricData=data)
