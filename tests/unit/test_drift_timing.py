"""When each drift appeared (changed_at / changed_at_source), and the diagnostics tools' new fields, on an
in-process moto account and on stubbed account records (CloudTrail present, absent, or failing)."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from incident_responder.account.baseline import record_baseline
from incident_responder.account.drift import Difference, date_differences
from incident_responder.account.network import NetworkState
from incident_responder.account.role import RoleState
from incident_responder.account.state import AliasState, FunctionConfiguration
from incident_responder.core.aws import AwsClients
from incident_responder.investigation import diagnostics

FN = "orders-api"
REGION = "us-east-1"
SECRET = "canary-orders-7f3a"


# -- stubbed account records -----------------------------------------------------------------------
class StubLambda:
    def __init__(self, function: str, versions: dict[str, str], mappings: dict[str, datetime]):
        self.function, self.versions, self.mappings = function, versions, mappings
        self.calls: list[tuple[str, Any]] = []

    def get_function_configuration(self, FunctionName: str, Qualifier: str | None = None) -> dict[str, Any]:
        self.calls.append(("get_function_configuration", Qualifier))
        return {"LastModified": self.versions[Qualifier] if Qualifier else self.function}

    def list_event_source_mappings(self, FunctionName: str, Marker: str | None = None) -> dict[str, Any]:
        self.calls.append(("list_event_source_mappings", Marker))
        return {"EventSourceMappings": [{"UUID": u, "LastModified": t} for u, t in self.mappings.items()]}


class StubTrail:
    def __init__(self, events: dict[str, list[dict[str, Any]]] | Exception):
        self.events = events
        self.calls: list[str] = []

    def lookup_events(self, LookupAttributes, StartTime, MaxResults) -> dict[str, Any]:
        resource = LookupAttributes[0]["AttributeValue"]
        self.calls.append(resource)
        if isinstance(self.events, Exception):
            raise self.events
        return {"Events": [e for e in self.events.get(resource, []) if e["EventTime"] >= StartTime]}


class StubClients:
    def __init__(self, **services: Any):
        self.services = services

    def get(self, service: str) -> Any:
        return self.services[service]


SINCE = "2026-11-23T17:00:00+00:00"
T0 = datetime(2026, 11, 23, 17, 0, tzinfo=UTC)
KEY = "arn:aws:kms:us-east-1:123456789012:key/k-1"
UUID = "a1b2c3d4-5678-90ab-cdef-111122223333"
CURRENT = FunctionConfiguration(
    function_name=FN,
    role=RoleState(role_name="orders-api-role", role_arn="arn:aws:iam::123456789012:role/orders-api-role"),
    reserved_concurrency=20,
    timeout=1,
    memory_size=256,
    network=NetworkState(in_vpc=False),
    aliases=[AliasState(name="live", function_version="3", code_sha256="new")],
)
DIFFERENCES = [
    Difference(path="aliases.live.function_version", baseline="2", current="3"),
    Difference(path=f"event_source_mappings.{UUID}.state", baseline="Enabled", current="Disabled"),
    Difference(path=f"kms_keys.{KEY}.key_state", baseline="Enabled", current="Disabled"),
    Difference(path="role.inline_policies.dynamodb-access", baseline={"Statement": []}, current=None),
    Difference(path="timeout", baseline=10, current=1),
]


def account(trail: StubTrail, *, function_modified: str = "2026-11-23T17:20:00.000+0000") -> StubClients:
    lam = StubLambda(
        function_modified,
        versions={"3": "2026-11-23T17:10:00.123456789Z"},
        mappings={UUID: T0 + timedelta(minutes=30)},
    )
    return StubClients(**{"lambda": lam, "cloudtrail": trail})


def dated(clients: StubClients) -> dict[str, tuple[str | None, str | None]]:
    out = date_differences(clients, FN, DIFFERENCES, SINCE, CURRENT)
    return {d.path.split(".")[0]: (d.changed_at, d.changed_at_source) for d in out}


def test_without_cloudtrail_the_resources_own_times_date_what_they_can():
    trail = StubTrail(ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "LookupEvents"))
    when = dated(account(trail))
    assert when == {
        "aliases": ("2026-11-23T17:10:00.123Z", "version:3.LastModified"),
        "event_source_mappings": ("2026-11-23T17:30:00.000Z", "event_source_mapping.LastModified"),
        "kms_keys": (None, None),  # a key records no modification time: only CloudTrail knows
        "role": (None, None),
        "timeout": ("2026-11-23T17:20:00.000Z", "function.LastModified"),
    }
    assert len(trail.calls) == 1  # unavailable once: not asked again for the other resources
    dated(account(trail))
    assert len(trail.calls) == 1  # nor, for a while, by the next drift check of this process


def test_a_throttled_trail_is_asked_again_by_the_next_drift_check():
    trail = StubTrail(ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "LookupEvents"))
    assert dated(account(trail))["kms_keys"] == (None, None)
    dated(account(trail))
    assert len(trail.calls) == 2


@pytest.mark.parametrize("failure", [NotImplementedError("lookup_events"), ValueError("x")], ids=["moto", "other"])
def test_a_trail_that_is_not_there_never_fails_the_drift(failure):
    if isinstance(failure, ValueError):
        with pytest.raises(ValueError):  # only AWS's own failures are absorbed: a bug still shows
            dated(account(StubTrail(failure)))
        return
    assert dated(account(StubTrail(failure)))["kms_keys"] == (None, None)


def test_cloudtrail_dates_each_change_by_its_own_event():
    events = {
        KEY: [
            {"EventName": "DisableKey", "EventTime": T0 + timedelta(minutes=12)},
            {"EventName": "DescribeKey", "EventTime": T0 + timedelta(minutes=40)},  # a read: not the change
        ],
        "orders-api-role": [{"EventName": "DeleteRolePolicy", "EventTime": T0 + timedelta(minutes=5)}],
        FN: [
            {"EventName": "UpdateAlias20150331", "EventTime": T0 + timedelta(minutes=11)},
            {"EventName": "UpdateFunctionConfiguration20150331v2", "EventTime": T0 + timedelta(minutes=21)},
        ],
        UUID: [{"EventName": "UpdateEventSourceMapping20150331", "EventTime": T0 + timedelta(minutes=29)}],
    }
    when = dated(account(StubTrail(events)))
    assert when == {
        "aliases": ("2026-11-23T17:11:00.000Z", "cloudtrail:UpdateAlias20150331"),
        "event_source_mappings": ("2026-11-23T17:29:00.000Z", "cloudtrail:UpdateEventSourceMapping20150331"),
        "kms_keys": ("2026-11-23T17:12:00.000Z", "cloudtrail:DisableKey"),
        "role": ("2026-11-23T17:05:00.000Z", "cloudtrail:DeleteRolePolicy"),
        "timeout": ("2026-11-23T17:21:00.000Z", "cloudtrail:UpdateFunctionConfiguration20150331v2"),
    }


def test_a_failed_call_cloudtrail_recorded_changed_nothing_and_dates_no_difference():
    refused = json.dumps({"errorCode": "ResourceConflictException", "errorMessage": "pending update"})
    events = {
        FN: [
            {"EventName": "UpdateFunctionConfiguration20150331v2", "EventTime": T0 + timedelta(minutes=21)},
            {
                "EventName": "UpdateFunctionConfiguration20150331v2",
                "EventTime": T0 + timedelta(minutes=35),
                "CloudTrailEvent": refused,
            },
        ]
    }
    when = dated(account(StubTrail(events)))
    assert when["timeout"] == ("2026-11-23T17:21:00.000Z", "cloudtrail:UpdateFunctionConfiguration20150331v2")


def test_a_time_not_after_the_baseline_cannot_be_when_a_difference_from_it_appeared():
    trail = StubTrail(NotImplementedError("lookup_events"))
    # In the baseline's own second (captured_at is cut to the second): not certainly after it.
    assert dated(account(trail, function_modified="2026-11-23T17:00:00.900+0000"))["timeout"] == (None, None)
    assert dated(account(trail, function_modified="2026-11-23T16:00:00.000+0000"))["timeout"] == (None, None)
    assert dated(account(trail, function_modified="2026-11-23T17:00:01.000+0000"))["timeout"][1] == (
        "function.LastModified"
    )


# -- an in-process moto account ----------------------------------------------------------------------
def _code(text: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.js", text)
    return buffer.getvalue()


@pytest.fixture
def moto_account(monkeypatch):
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "BASELINE_TABLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        clients = AwsClients(boto3.Session(region_name=REGION))
        clients.get("dynamodb").create_table(
            TableName="incident-baselines",
            KeySchema=[{"AttributeName": "function_name", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "function_name", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        role = clients.get("iam").create_role(RoleName=f"{FN}-role", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        key = clients.get("kms").create_key()["KeyMetadata"]["Arn"]
        lam = clients.get("lambda")
        lam.create_function(
            FunctionName=FN,
            Runtime="nodejs20.x",
            Role=role,
            Handler="index.handler",
            Code={"ZipFile": _code("exports.handler = async () => 'v1'")},
            KMSKeyArn=key,
            Environment={"Variables": {"DB_PASSWORD": SECRET}},
        )
        lam.publish_version(FunctionName=FN)
        lam.create_alias(FunctionName=FN, Name="live", FunctionVersion="1")
        sqs = clients.get("sqs")
        queue = sqs.create_queue(QueueName="orders-queue")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        mapping = lam.create_event_source_mapping(FunctionName=FN, EventSourceArn=queue_arn, BatchSize=10)["UUID"]
        record_baseline(clients, FN)
        # The baseline was taken an hour ago: what changes now is certainly after it.
        clients.get("dynamodb").update_item(
            TableName="incident-baselines",
            Key={"function_name": {"S": FN}},
            UpdateExpression="SET captured_at = :t",
            ExpressionAttributeValues={
                ":t": {"S": (datetime.now(UTC) - timedelta(hours=1)).isoformat(timespec="seconds")}
            },
        )
        yield clients, key, mapping, queue_arn


def test_drift_on_a_moto_account_says_when_alias_and_mapping_changed_and_leaves_the_key_unset(moto_account):
    clients, key, mapping, _ = moto_account
    lam = clients.get("lambda")
    lam.update_function_code(FunctionName=FN, ZipFile=_code("exports.handler = async () => { throw new TypeError() }"))
    published = lam.publish_version(FunctionName=FN)
    lam.update_alias(FunctionName=FN, Name="live", FunctionVersion=published["Version"])
    lam.update_event_source_mapping(UUID=mapping, Enabled=False)
    clients.get("kms").disable_key(KeyId=key.rsplit("/", 1)[-1])  # moto takes the id only

    drift = diagnostics.get_config_drift(clients, FN)
    assert drift.error is None and drift.drifted
    by_path = {d.path: d for d in drift.differences}
    assert set(by_path) == {
        "aliases.live.function_version",
        "aliases.live.code_sha256",
        f"event_source_mappings.{mapping}.state",
        f"kms_keys.{key}.key_state",
    }
    version = by_path["aliases.live.function_version"]
    assert (version.baseline, version.current) == ("1", "2")
    assert version.changed_at_source == "version:2.LastModified"
    assert version.changed_at.startswith(published["LastModified"][:19])  # the version's publication
    esm = by_path[f"event_source_mappings.{mapping}.state"]
    assert (esm.current, esm.changed_at_source) == ("Disabled", "event_source_mapping.LastModified")
    assert datetime.fromisoformat(esm.changed_at.replace("Z", "+00:00")) > datetime.now(UTC) - timedelta(minutes=5)
    # moto has no CloudTrail LookupEvents, and a key records no modification time: unset, and no failure.
    key_state = by_path[f"kms_keys.{key}.key_state"]
    assert (key_state.current, key_state.changed_at, key_state.changed_at_source) == ("Disabled", None, None)


def test_lambda_config_shows_the_key_aliases_and_mappings_but_never_the_environment(moto_account):
    clients, key, mapping, queue_arn = moto_account
    clients.get("kms").disable_key(KeyId=key.rsplit("/", 1)[-1])  # moto takes the id only
    config = diagnostics.get_lambda_config(clients, FN)
    assert config.error is None and config.read_errors == []
    assert (config.KMSKeyArn, config.KMSKeyState) == (key, "Disabled")
    assert config.Aliases == {"live": "1"}
    (esm,) = config.EventSourceMappings
    assert (esm.UUID, esm.EventSourceArn, esm.State, esm.BatchSize) == (mapping, queue_arn, "Enabled", 10)
    dumped = json.dumps(config.model_dump())
    assert SECRET not in dumped and "DB_PASSWORD" not in dumped


def test_lambda_config_keeps_what_it_read_when_the_key_cannot_be_read(moto_account, monkeypatch):
    clients, *_ = moto_account
    kms = clients.get("kms")

    def denied(**kwargs):
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}}, "DescribeKey")

    monkeypatch.setattr(kms, "describe_key", denied)
    config = diagnostics.get_lambda_config(clients, FN)
    assert config.error is None and config.KMSKeyState is None and config.Aliases == {"live": "1"}
    assert config.read_errors == ["KMSKeyState: AccessDeniedException: not allowed"]


def test_recent_logs_read_a_node_error_whole_though_its_event_is_cut(moto_account):
    clients, *_ = moto_account
    logs = clients.get("logs")
    group, stream = f"/aws/lambda/{FN}", "2026/11/23/[2]0123abcd"
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName=stream)
    error = {
        "errorType": "TypeError",
        "errorMessage": "Cannot read properties of undefined (reading 'total')",
        "stack": ["TypeError: Cannot read properties of undefined (reading 'total')"]
        + ["    at Runtime.handler (file:///var/task/index.mjs:14:27)"] * 8,
    }
    now = int(datetime.now(UTC).timestamp() * 1000)
    lines = [
        "START RequestId: 6a1c7d6e-1111-4f00-9a3e-0c2f1b2d3e4f Version: 2",
        f"2026-11-23T18:44:05.108Z\t6a1c7d6e-1111-4f00-9a3e-0c2f1b2d3e4f\tERROR\tInvoke Error \t{json.dumps(error)}",
        "[INFO] AccessDenied is only a word here",
    ]
    logs.put_log_events(
        logGroupName=group,
        logStreamName=stream,
        logEvents=[{"timestamp": now + i, "message": line} for i, line in enumerate(lines)],
    )
    result = diagnostics.get_recent_logs(clients, FN)
    # START is left out of the events (its version is in invocations): the error is the first line.
    assert result.error is None and result.events[0].truncated
    (found,) = result.errors
    assert (found.error_type, found.origin, found.runtime, found.function_version) == (
        "TypeError",
        "application",
        "nodejs",
        "2",
    )
    assert (found.count, found.first_event, found.last_event) == (1, 0, 0)
    assert result.invocations.versions == ["2"]
