"""A small account with the wider world's shapes, built with boto3 against the lab for the new actions' tests:
``orders-api`` (nodejs20.x, versions 1 and 2, alias ``live`` on 1, its environment encrypted with a
customer-managed key) and ``queue-consumer`` (python3.12, fed by ``queue-consumer-queue`` through an event
source mapping), both onboarded. The faults are made here too, with plain API calls: what the tests check
is the responder, not the lab's workloads or chaos.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass

from incident_responder.account.baseline import baseline_table_name, record_baseline
from incident_responder.core.aws import AwsClients
from incident_responder.lab.account.resources import create_table

ORDERS = "orders-api"
CONSUMER = "queue-consumer"
QUEUE = "queue-consumer-queue"
STATE_TABLE = "incident-state"


@dataclass
class WiderAccount:
    clients: AwsClients
    orders_arn: str
    consumer_arn: str
    key_arn: str
    other_key_arn: str
    queue_arn: str
    queue_url: str
    mapping_uuid: str
    v1_sha: str
    v2_sha: str

    # -- faults --------------------------------------------------------------------------------------
    def move_alias(self, version: str = "2", alias: str = "live") -> None:
        self.clients.get("lambda").update_alias(FunctionName=ORDERS, Name=alias, FunctionVersion=version)

    def disable_key(self) -> None:
        self.clients.get("kms").disable_key(KeyId=self.key_arn.rsplit("/", 1)[-1])

    def disable_mapping(self, uuid: str | None = None) -> None:
        self.clients.get("lambda").update_event_source_mapping(UUID=uuid or self.mapping_uuid, Enabled=False)

    # -- reads ---------------------------------------------------------------------------------------
    def alias_version(self, alias: str = "live") -> str:
        return self.clients.get("lambda").get_alias(FunctionName=ORDERS, Name=alias)["FunctionVersion"]

    def key_state(self, key_arn: str | None = None) -> str:
        key = (key_arn or self.key_arn).rsplit("/", 1)[-1]
        return self.clients.get("kms").describe_key(KeyId=key)["KeyMetadata"]["KeyState"]

    def mapping_state(self, uuid: str | None = None) -> str:
        return self.clients.get("lambda").get_event_source_mapping(UUID=uuid or self.mapping_uuid)["State"]


def code(text: str, name: str = "index.js") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, text)
    return buffer.getvalue()


def _role(clients: AwsClients, name: str) -> str:
    trust = (
        '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": '
        '"lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}'
    )
    return clients.get("iam").create_role(RoleName=name, AssumeRolePolicyDocument=trust)["Role"]["Arn"]


def build_wider_account(clients: AwsClients) -> WiderAccount:
    """Both functions created and onboarded (baselines recorded) in a fresh lab, with the responder's tables."""
    lam, kms, sqs = clients.get("lambda"), clients.get("kms"), clients.get("sqs")
    create_table(clients, "BaselineTable", baseline_table_name())
    create_table(clients, "IncidentStateTable", STATE_TABLE)

    key_arn = kms.create_key(Description="orders-api environment")["KeyMetadata"]["Arn"]
    other_key_arn = kms.create_key(Description="someone else's key")["KeyMetadata"]["Arn"]
    orders_arn = lam.create_function(
        FunctionName=ORDERS,
        Runtime="nodejs20.x",
        Role=_role(clients, "orders-api-role"),
        Handler="index.handler",
        Code={"ZipFile": code("exports.handler = async () => ({ok: true});")},
        Environment={"Variables": {"TABLE_NAME": "orders-api-orders"}},
        KMSKeyArn=key_arn,
    )["FunctionArn"]
    v1 = lam.publish_version(FunctionName=ORDERS)
    lam.create_alias(FunctionName=ORDERS, Name="live", FunctionVersion=v1["Version"])
    lam.update_function_code(FunctionName=ORDERS, ZipFile=code("exports.handler = async (e) => e.order.id;"))
    v2 = lam.publish_version(FunctionName=ORDERS)
    assert (v1["Version"], v2["Version"]) == ("1", "2") and v1["CodeSha256"] != v2["CodeSha256"]

    queue_url = sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    consumer_arn = lam.create_function(
        FunctionName=CONSUMER,
        Runtime="python3.12",
        Role=_role(clients, "queue-consumer-role"),
        Handler="app.handler",
        Code={"ZipFile": code("def handler(event, context):\n    return None\n", "app.py")},
    )["FunctionArn"]
    mapping = lam.create_event_source_mapping(EventSourceArn=queue_arn, FunctionName=CONSUMER, BatchSize=10)

    record_baseline(clients, ORDERS)
    record_baseline(clients, CONSUMER)
    return WiderAccount(
        clients=clients,
        orders_arn=orders_arn,
        consumer_arn=consumer_arn,
        key_arn=key_arn,
        other_key_arn=other_key_arn,
        queue_arn=queue_arn,
        queue_url=queue_url,
        mapping_uuid=mapping["UUID"],
        v1_sha=v1["CodeSha256"],
        v2_sha=v2["CodeSha256"],
    )


def rollback(version="1", alias="live", function=ORDERS, target=None):
    return {
        "fault_type": "deployment_regression",
        "action_type": "rollback_alias",
        "target_resource": target or f"arn:aws:lambda:us-east-1:123456789012:function:{function}:{alias}",
        "parameters": {"function_name": function, "alias_name": alias, "function_version": version},
    }
