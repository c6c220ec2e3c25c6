"""The account the catalogue actions are tried in: orders-api (its environment names a secret), queue-consumer (fed by a queue through an event source mapping) and data-processor (1024 MB of /tmp), onboarded, with a secret and a queue no onboarded function uses."""

from __future__ import annotations

import io
import json
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from incident_responder.account.baseline import baseline_table_name, record_baseline
from incident_responder.core.aws import AwsClients
from incident_responder.lab.account.resources import create_table
from incident_responder.state import keys

ORDERS = "orders-api"  # its environment names the secret


CONSUMER = "queue-consumer"  # fed by the queue through an event source mapping


PROCESSOR = "data-processor"  # 1024 MB of /tmp


SECRET = "orders-api/payment-key"


OTHER_SECRET = "billing/other-key"  # in the account, named by no onboarded function


QUEUE = "queue-consumer-queue"


OTHER_QUEUE = "other-queue"  # in the account, read by no mapping of the function


STATE_TABLE = "incident-state"


VISIBILITY = 180  # the queue's, at onboarding


FUNCTION_TIMEOUT = 30


TMP_MB = 1024


def zipped(text: str, name: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, text)
    return buffer.getvalue()


def lambda_role(clients: AwsClients, name: str) -> str:
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    return clients.get("iam").create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]


def create_function(clients: AwsClients, name: str, **extra: Any) -> str:
    return clients.get("lambda").create_function(
        FunctionName=name,
        Runtime="python3.12",
        Role=lambda_role(clients, f"{name}-role"),
        Handler="app.handler",
        Code={"ZipFile": zipped("def handler(event, context):\n    return None\n", "app.py")},
        Timeout=FUNCTION_TIMEOUT,
        **extra,
    )["FunctionArn"]


def create_secret(clients: AwsClients, name: str) -> str:
    return clients.get("secretsmanager").create_secret(Name=name, SecretString="not-a-real-key")["ARN"]


@dataclass
class Catalogue:
    """The module's account, with the faults as plain API calls and reads of what they change."""

    clients: AwsClients
    lab: Any
    secret_arn: str
    other_secret_arn: str
    queue_arn: str
    queue_url: str
    other_queue_arn: str
    other_queue_url: str
    mapping_uuid: str
    rerecord: set[str] = field(default_factory=set)

    # -- faults --------------------------------------------------------------------------------------
    def schedule_deletion(self, secret_arn: str | None = None, days: int = 10) -> None:
        self.clients.get("secretsmanager").delete_secret(
            SecretId=secret_arn or self.secret_arn, RecoveryWindowInDays=days
        )

    def set_visibility(self, seconds: int, queue_url: str | None = None) -> None:
        self.clients.get("sqs").set_queue_attributes(
            QueueUrl=queue_url or self.queue_url, Attributes={"VisibilityTimeout": str(seconds)}
        )

    def set_tmp(self, mb: int, function: str = PROCESSOR) -> None:
        self.clients.get("lambda").update_function_configuration(FunctionName=function, EphemeralStorage={"Size": mb})

    # -- reads ---------------------------------------------------------------------------------------
    def scheduled(self, secret_arn: str | None = None) -> bool:
        described = self.clients.get("secretsmanager").describe_secret(SecretId=secret_arn or self.secret_arn)
        return described.get("DeletedDate") is not None

    def visibility(self, queue_url: str | None = None) -> int:
        attributes = self.clients.get("sqs").get_queue_attributes(
            QueueUrl=queue_url or self.queue_url, AttributeNames=["VisibilityTimeout"]
        )
        return int(attributes["Attributes"]["VisibilityTimeout"])

    def tmp(self, function: str = PROCESSOR) -> int:
        return self.clients.get("lambda").get_function_configuration(FunctionName=function)["EphemeralStorage"]["Size"]

    # -- back to the baseline --------------------------------------------------------------------------
    def reset(self) -> None:
        for arn in (self.secret_arn, self.other_secret_arn):
            if self.scheduled(arn):
                self.clients.get("secretsmanager").restore_secret(SecretId=arn)
        for url in (self.queue_url, self.other_queue_url):
            if self.visibility(url) != VISIBILITY:
                self.set_visibility(VISIBILITY, url)
        if self.tmp() != TMP_MB:
            self.set_tmp(TMP_MB)
        for function in sorted(self.rerecord):
            record_baseline(self.clients, function)
        self.rerecord.clear()
        ddb = self.clients.get("dynamodb")  # leases an apply left held (a test that applies without rolling back)
        for page in ddb.get_paginator("scan").paginate(TableName=STATE_TABLE, ProjectionExpression="incident_id"):
            for item in page["Items"]:
                if item["incident_id"]["S"].startswith(keys.LEASE_PREFIX):
                    ddb.delete_item(TableName=STATE_TABLE, Key=item)
        self.lab.clear_failures()


def build_catalogue(clients: AwsClients, lab: Any) -> Catalogue:
    create_table(clients, "BaselineTable", baseline_table_name())
    create_table(clients, "IncidentStateTable", STATE_TABLE)
    secret_arn = create_secret(clients, SECRET)
    other_secret_arn = create_secret(clients, OTHER_SECRET)
    create_function(clients, ORDERS, Environment={"Variables": {"PAYMENT_SECRET_ARN": secret_arn}})

    sqs = clients.get("sqs")
    queues = {}
    for name in (QUEUE, OTHER_QUEUE):
        url = sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": str(VISIBILITY)})["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        queues[name] = (url, arn)
    create_function(clients, CONSUMER)
    mapping = clients.get("lambda").create_event_source_mapping(
        EventSourceArn=queues[QUEUE][1], FunctionName=CONSUMER, BatchSize=10
    )
    create_function(clients, PROCESSOR, EphemeralStorage={"Size": TMP_MB})
    for function in (ORDERS, CONSUMER, PROCESSOR):
        record_baseline(clients, function)
    return Catalogue(
        clients=clients,
        lab=lab,
        secret_arn=secret_arn,
        other_secret_arn=other_secret_arn,
        queue_url=queues[QUEUE][0],
        queue_arn=queues[QUEUE][1],
        other_queue_url=queues[OTHER_QUEUE][0],
        other_queue_arn=queues[OTHER_QUEUE][1],
        mapping_uuid=mapping["UUID"],
    )


@contextmanager
def catalogue_account(lab, clients: AwsClients):
    """A fresh lab with the three functions onboarded and the incident-state table, this process pointed at it."""

    with pytest.MonkeyPatch.context() as mp:
        lab.reset()
        for key, value in lab.env.items():
            mp.setenv(key, value)
        for key in ("AWS_PROFILE", "BASELINE_TABLE"):
            mp.delenv(key, raising=False)
        yield build_catalogue(clients, lab)
