"""A function's recorded known-good configuration, and drift against it.

Onboarding a function records its current configuration as the baseline (in DynamoDB, one item
per function); it is refreshed only after a verified healthy state. Restores and drift checks read
it; nothing else in the project hard-codes what "healthy" looks like.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from incident_responder.account_state import FunctionConfiguration, configuration_from, function_name_of
from incident_responder.aws import AwsClients

DEFAULT_BASELINE_TABLE = "incident-baselines"


def baseline_table_name() -> str:
    return os.environ.get("BASELINE_TABLE", DEFAULT_BASELINE_TABLE)


class Baseline(BaseModel):
    function_name: str
    captured_at: str
    configuration: FunctionConfiguration
    function_arn: str | None = Field(default=None, description="unqualified; scopes ARNs the MCP tools accept")


class Difference(BaseModel):
    path: str = Field(description="dotted path into the configuration, e.g. role.inline_policies.s3-access")
    baseline: Any = None
    current: Any = None


class BaselineNotFoundError(LookupError):
    """No baseline is recorded for this function (it was never onboarded)."""


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
    return [function_arn, configuration.role.role_arn, *network, *keys, *mappings]


def event_source_mapping_arn(function_arn: str, uuid: str) -> str:
    """``arn:aws:lambda:REGION:ACCOUNT:event-source-mapping:UUID`` (the resource IAM and tagging name)."""
    partition, region, account = function_arn.split(":")[1], function_arn.split(":")[3], function_arn.split(":")[4]
    return f"arn:{partition}:lambda:{region}:{account}:event-source-mapping:{uuid}"


def record_baseline(clients: AwsClients, function_name: str, table: str | None = None) -> Baseline:
    """Capture the function's current configuration, store it as its baseline, and tag what may be restored."""
    raw = clients.get("lambda").get_function_configuration(FunctionName=function_name_of(function_name))
    configuration = configuration_from(clients, raw)
    arn = raw["FunctionArn"]
    tag_onboarded(clients, ":".join(arn.split(":")[:7]), configuration)
    baseline = Baseline(
        function_name=configuration.function_name,
        captured_at=datetime.now(UTC).isoformat(timespec="seconds"),
        configuration=configuration,
        function_arn=":".join(arn.split(":")[:7]),
    )
    clients.get("dynamodb").put_item(
        TableName=table or baseline_table_name(),
        Item={
            "function_name": {"S": baseline.function_name},
            "function_arn": {"S": baseline.function_arn},
            "captured_at": {"S": baseline.captured_at},
            # A JSON string: policy documents hold shapes DynamoDB's type system makes awkward.
            "configuration": {"S": configuration.model_dump_json()},
            # Queues and streams that invoke it: how ingest finds the function behind a queue's alarm.
            **(
                {"event_sources": {"SS": sorted({m.event_source_arn for m in configuration.event_source_mappings})}}
                if configuration.event_source_mappings
                else {}
            ),
        },
    )
    return baseline


def onboarded_arn(clients: AwsClients, function_name: str, table: str | None = None) -> str | None:
    """``None`` when the function was never onboarded; else the ARN its baseline recorded ("" for none).

    One small GetItem (the configuration is not read): what ingest and the MCP tools' scope check ask.
    AWS errors propagate.
    """
    item = (
        clients.get("dynamodb")
        .get_item(
            TableName=table or baseline_table_name(),
            Key={"function_name": {"S": function_name}},
            ProjectionExpression="function_name, function_arn",
            ConsistentRead=True,
        )
        .get("Item")
    )
    return None if not item else item.get("function_arn", {}).get("S", "")


def load_baseline(clients: AwsClients, function_name: str, table: str | None = None) -> Baseline:
    item = (
        clients.get("dynamodb")
        .get_item(TableName=table or baseline_table_name(), Key={"function_name": {"S": function_name}})
        .get("Item")
    )
    if not item:
        raise BaselineNotFoundError(f"no baseline recorded for {function_name}; onboard the function first")
    return Baseline(
        function_name=item["function_name"]["S"],
        captured_at=item["captured_at"]["S"],
        configuration=FunctionConfiguration.model_validate_json(item["configuration"]["S"]),
        function_arn=item.get("function_arn", {}).get("S"),
    )


def _comparable(configuration: FunctionConfiguration) -> dict[str, Any]:
    data = configuration.model_dump(mode="json")
    # Keyed by id rather than listed, so a difference names the group or subnet it is about.
    network = data["network"]
    network["security_groups"] = {g.pop("group_id"): g for g in network["security_groups"]}
    network["subnets"] = {s.pop("subnet_id"): s for s in network["subnets"]}
    data["aliases"] = {a.pop("name"): a for a in data["aliases"]}
    data["kms_keys"] = {k.pop("key_arn"): k for k in data["kms_keys"]}
    data["event_source_mappings"] = {m.pop("uuid"): m for m in data["event_source_mappings"]}
    return data


def _diff(baseline: Any, current: Any, path: str, out: list[Difference]) -> None:
    if isinstance(baseline, dict) and isinstance(current, dict):
        for key in sorted(set(baseline) | set(current), key=str):
            sub = f"{path}.{key}" if path else str(key)
            _diff(baseline.get(key), current.get(key), sub, out)
    elif _canonical(baseline) != _canonical(current):
        out.append(Difference(path=path, baseline=baseline, current=current))


def _canonical(value: Any) -> str:
    # Lists of rules or statements are compared as sets: AWS does not promise an order.
    if isinstance(value, list):
        return json.dumps(sorted(_canonical(v) for v in value))
    return json.dumps(value, sort_keys=True)


def diff_configurations(baseline: FunctionConfiguration, current: FunctionConfiguration) -> list[Difference]:
    """Differences between two configurations, one per changed leaf (lists compared whole).

    >>> from incident_responder.account_state import NetworkState, RoleState
    >>> role = RoleState(role_name="r", role_arn="arn:aws:iam::1:role/r")
    >>> a = FunctionConfiguration(function_name="f", role=role, reserved_concurrency=10,
    ...     timeout=30, memory_size=512, network=NetworkState(in_vpc=False))
    >>> [d.path for d in diff_configurations(a, a.model_copy(update={"timeout": 1}))]
    ['timeout']
    """
    out: list[Difference] = []
    _diff(_comparable(baseline), _comparable(current), "", out)
    return out
