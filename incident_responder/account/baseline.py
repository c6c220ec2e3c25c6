"""Onboarding and every later stage: a function's recorded known-good configuration (its baseline).

Onboarding a function records its current configuration as the baseline (in DynamoDB, one item
per function); it is refreshed only after a verified healthy state. Restores and drift checks read
it (drift against it: :mod:`incident_responder.account.drift`); nothing else in the project hard-codes
what "healthy" looks like.
"""

from __future__ import annotations

import json
import os
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from incident_responder.account.errors import BaselineNotFoundError
from incident_responder.account.event_sources import queue_url_of
from incident_responder.account.names import check_same_function, function_name_of
from incident_responder.account.role import managed_policy_documents
from incident_responder.account.state import FunctionConfiguration, configuration_from
from incident_responder.account.vetting import NotRestorable, vet
from incident_responder.core.aws import AwsClients
from incident_responder.core.members import function_key

DEFAULT_BASELINE_TABLE = "incident-baselines"


def baseline_table_name() -> str:
    return os.environ.get("BASELINE_TABLE", DEFAULT_BASELINE_TABLE)


class Baseline(BaseModel):
    function_name: str
    captured_at: str
    configuration: FunctionConfiguration
    function_arn: str | None = Field(default=None, description="unqualified; scopes ARNs the MCP tools accept")
    not_restorable: list[NotRestorable] = Field(
        default_factory=list,
        description="values a restore must never bring back (wildcard or administrator grants, concurrency 0, "
        "timeout or memory below the floors), with why: a person restores them",
    )

    def not_restorable_paths(self) -> dict[str, str]:
        """Each not-restorable path with its reasons joined, as the guardrails take them."""
        out: dict[str, list[str]] = {}
        for entry in self.not_restorable:
            out.setdefault(entry.path, []).append(entry.reason)
        return {path: "; ".join(reasons) for path, reasons in out.items()}


# The remediate function's role may change only resources carrying this tag (template.yaml, RemediateFunction).
ONBOARDED_TAG = "incident-responder:onboarded"


def tag_onboarded(clients: AwsClients, function_arn: str, configuration: FunctionConfiguration) -> list[str]:
    """Tag the function and what its restores touch (its role, security groups, subnets' network ACLs), so the
    remediate function's tag-conditioned permissions reach exactly the onboarded resources. Returns what was tagged."""
    clients.get("lambda").tag_resource(Resource=function_arn, Tags={ONBOARDED_TAG: "true"})
    clients.get("iam").tag_role(RoleName=configuration.role.role_name, Tags=[{"Key": ONBOARDED_TAG, "Value": "true"}])
    network = [g.group_id for g in configuration.network.security_groups] + [
        s.network_acl_id for s in configuration.network.subnets if s.network_acl_id
    ]
    if network:
        clients.get("ec2").create_tags(Resources=network, Tags=[{"Key": ONBOARDED_TAG, "Value": "true"}])
    keys = [k.key_arn for k in configuration.kms_keys]
    for key in keys:
        # The key id: KMS takes it or the ARN, and some emulators only the id.
        clients.get("kms").tag_resource(
            KeyId=key.rsplit("/", 1)[-1], Tags=[{"TagKey": ONBOARDED_TAG, "TagValue": "true"}]
        )
    mappings = [event_source_mapping_arn(function_arn, m.uuid) for m in configuration.event_source_mappings]
    for mapping in mappings:
        clients.get("lambda").tag_resource(Resource=mapping, Tags={ONBOARDED_TAG: "true"})
    # The queues its mappings read and the secrets its environment names: restore_queue_attributes and
    # restore_secret reach only these.
    queues = sorted(
        {m.event_source_arn for m in configuration.event_source_mappings if m.queue_visibility_timeout is not None}
    )
    for queue in queues:
        clients.get("sqs").tag_queue(QueueUrl=queue_url_of(queue), Tags={ONBOARDED_TAG: "true"})
    secrets = [s.secret_arn for s in configuration.secrets if s.exists]
    for secret in secrets:
        clients.get("secretsmanager").tag_resource(SecretId=secret, Tags=[{"Key": ONBOARDED_TAG, "Value": "true"}])
    return [function_arn, configuration.role.role_arn, *network, *keys, *mappings, *queues, *secrets]


def event_source_mapping_arn(function_arn: str, uuid: str) -> str:
    """``arn:aws:lambda:REGION:ACCOUNT:event-source-mapping:UUID`` (the resource IAM and tagging name)."""
    partition, region, account = function_arn.split(":")[1], function_arn.split(":")[3], function_arn.split(":")[4]
    return f"arn:{partition}:lambda:{region}:{account}:event-source-mapping:{uuid}"


def record_baseline(clients: AwsClients, function_name: str, table: str | None = None) -> Baseline:
    """Capture the function's current configuration, store it as its baseline, and tag what may be restored."""
    raw = clients.get("lambda").get_function_configuration(FunctionName=function_name_of(function_name))
    arn = raw["FunctionArn"]
    check_same_function(function_name, arn)  # before anything is tagged or recorded
    configuration = configuration_from(clients, raw)
    tag_onboarded(clients, ":".join(arn.split(":")[:7]), configuration)
    baseline = Baseline(
        function_name=configuration.function_name,
        captured_at=datetime.now(UTC).isoformat(timespec="seconds"),
        configuration=configuration,
        function_arn=":".join(arn.split(":")[:7]),
        not_restorable=vet(configuration, _managed_documents(clients, configuration)),
    )
    clients.get("dynamodb").put_item(
        TableName=table or baseline_table_name(),
        Item={
            "function_name": {"S": function_key(clients, baseline.function_name)},
            "function_arn": {"S": baseline.function_arn},
            "captured_at": {"S": baseline.captured_at},
            # A JSON string: policy documents hold shapes DynamoDB's type system makes awkward.
            "configuration": {"S": configuration.model_dump_json()},
            "not_restorable": {"S": json.dumps([n.model_dump() for n in baseline.not_restorable])},
            # Queues and streams that invoke it: how ingest finds the function behind a queue's alarm.
            **(
                {"event_sources": {"SS": sorted({m.event_source_arn for m in configuration.event_source_mappings})}}
                if configuration.event_source_mappings
                else {}
            ),
            # The dead-letter queues of those sources: an alarm on one is an alarm on this function's processing.
            **(
                {"dead_letter_queues": {"SS": dead_letter_queues}}
                if (
                    dead_letter_queues := sorted(
                        {
                            m.dead_letter_queue_arn
                            for m in configuration.event_source_mappings
                            if m.dead_letter_queue_arn
                        }
                    )
                )
                else {}
            ),
        },
    )
    return baseline


def _managed_documents(clients: AwsClients, configuration: FunctionConfiguration) -> dict[str, Any]:
    """The default version's document of each attached customer managed policy that can be read (AWS managed ones
    are judged by name; one unreadable here is still judged by the guardrails for whatever an action would grant)."""
    customer = [arn for arn in configuration.role.attached_policy_arns if arn.split(":")[4:5] != ["aws"]]
    return managed_policy_documents(clients, customer, skip_unreadable=True)


# One tool call's baseline items, by (table, key): its scope check and the tool itself read each once. Set by
# read_baselines_once() in the call's own context; the worker threads it starts share the same dictionary.
_ITEMS: ContextVar[dict[tuple[str, str], dict[str, Any] | None] | None] = ContextVar("baseline_items", default=None)


def read_baselines_once() -> None:
    """From here on in the current context (one MCP tool call: its task and the threads it starts), each function's
    baseline item is read from the table once, by the scope check, and the tool's own load takes that read."""
    _ITEMS.set({})


def _item(
    clients: AwsClients, function_name: str, table: str | None, projection: str | None = None
) -> dict[str, Any] | None:
    table = table or baseline_table_name()
    key = function_key(clients, function_name)
    items = _ITEMS.get()
    if items is not None and (table, key) in items:
        return items[(table, key)]
    request: dict[str, Any] = {"TableName": table, "Key": {"function_name": {"S": key}}, "ConsistentRead": True}
    if projection and items is None:
        request["ProjectionExpression"] = projection
    item = clients.get("dynamodb").get_item(**request).get("Item")
    if items is not None:
        items[(table, key)] = item
    return item


def onboarded_arn(clients: AwsClients, function_name: str, table: str | None = None) -> str | None:
    """``None`` when the function was never onboarded; else the ARN its baseline recorded ("" for none).

    One small GetItem (the configuration is not read, unless a tool of this call loads it next: see
    :func:`read_baselines_once`): what ingest and the MCP tools' scope check ask. AWS errors propagate.
    """
    item = _item(clients, function_name, table, projection="function_name, function_arn")
    return None if not item else item.get("function_arn", {}).get("S", "")


def load_baseline(clients: AwsClients, function_name: str, table: str | None = None) -> Baseline:
    item = _item(clients, function_name, table)
    if not item:
        raise BaselineNotFoundError(f"no baseline recorded for {function_name}; onboard the function first")
    configuration = FunctionConfiguration.model_validate_json(item["configuration"]["S"])
    # Judged again as loaded: an item written by hand, or recorded before vetting, holds no verdicts of its own.
    recorded = [NotRestorable.model_validate(n) for n in json.loads(item.get("not_restorable", {}).get("S", "[]"))]
    return Baseline(
        function_name=configuration.function_name,
        captured_at=item["captured_at"]["S"],
        configuration=configuration,
        function_arn=item.get("function_arn", {}).get("S"),
        not_restorable=list({(n.path, n.reason): n for n in [*recorded, *vet(configuration)]}.values()),
    )
