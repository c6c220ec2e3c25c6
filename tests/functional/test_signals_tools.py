"""The metrics, changes and dependencies tools against the lab (with its CloudTrail), their bounds, and their scope."""

from __future__ import annotations

import io
import json
import math
import time
import zipfile
from datetime import UTC, datetime, timedelta

import anyio
import boto3
import jsonschema
import pytest

from incident_responder.account.baseline import record_baseline
from incident_responder.investigation import diagnostics
from incident_responder.lab.account.data_processor import create_sample_account
from incident_responder.lab.account.orders_api import create_orders_api
from incident_responder.lab.account.queue_consumer import create_queue_consumer
from incident_responder.lab.cloudtrail import TRAIL_CAPACITY
from incident_responder.mcp_transport.client import mcp_session
from scripts.bench_signals import measure
from tests.conftest import CANARY_SECRET, asgi_client
from tests.mcp_calls import KEY, URL, Recording, build, call_raw, tool_call

FN = "data-processor"
NEW_TOOLS = ("get_function_metrics", "get_recent_changes", "get_dependencies")
ANSWER_BOUND = 6 * 1024  # bytes of an answer, whatever the account holds


def put(clients, namespace: str, name: str, dims: dict[str, str], points: list[tuple[datetime, float]]) -> None:
    data = [
        {
            "MetricName": name,
            "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
            "Timestamp": at,
            "Value": value,
        }
        for at, value in points
    ]
    for first in range(0, len(data), 500):
        clients.get("cloudwatch").put_metric_data(Namespace=namespace, MetricData=data[first : first + 500])


def period_of(result, at: datetime) -> str:
    """The start of the tool's period holding ``at``, as the tool writes times."""
    start = datetime.fromisoformat(result.window_start.replace("Z", "+00:00"))
    index = math.floor((at - start).total_seconds() / result.period_seconds)
    return (start + timedelta(seconds=index * result.period_seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def other_function(clients, name: str) -> None:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("app.py", "def handler(event, context):\n    return {}\n")
    role = clients.get("lambda").get_function_configuration(FunctionName=FN)["Role"]
    clients.get("lambda").create_function(
        FunctionName=name, Runtime="python3.12", Role=role, Handler="app.handler", Code={"ZipFile": archive.getvalue()}
    )


def chaos_client(lab, service: str):
    """A client signing with a chaos access key (the lab's trail names its calls user/chaos)."""
    return boto3.client(
        service,
        endpoint_url=lab.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="AKIACHAOSEXAMPLE0001",
        aws_secret_access_key="testing",
    )


# -- get_function_metrics ------------------------------------------------------------------------------------
def test_metrics_say_where_errors_and_duration_departed_and_which_function_holds_the_accounts_concurrency(
    clients, sample
):
    now = datetime.now(UTC)
    dims = {"FunctionName": FN}
    minutes = [now - timedelta(minutes=m) for m in range(70, 0, -1)]  # the whole window, oldest first
    errors_from = now - timedelta(minutes=20)
    put(clients, "AWS/Lambda", "Invocations", dims, [(at, 5.0) for at in minutes])
    put(clients, "AWS/Lambda", "Errors", dims, [(at, 4.0 if at >= errors_from else 0.0) for at in minutes])
    put(clients, "AWS/Lambda", "Duration", dims, [(at, 300.0) for at in minutes[:-1]] + [(minutes[-1], 29_800.0)])
    put(clients, "AWS/Lambda", "ConcurrentExecutions", dims, [(at, 2.0) for at in minutes])
    other_function(clients, "batch-reports")
    busy = now - timedelta(minutes=10)
    put(clients, "AWS/Lambda", "ConcurrentExecutions", {"FunctionName": "batch-reports"}, [(busy, 950.0)])
    put(clients, "AWS/Lambda", "ConcurrentExecutions", {}, [(busy, 960.0)])

    result = diagnostics.get_function_metrics(clients, FN)
    assert result.error is None and result.gaps == []
    assert (result.period_seconds, result.timeout_seconds, result.reserved_concurrency) == (300, 30, 10)
    # Throttles, IteratorAge ... had no datapoint: no series.
    assert set(result.series) == {"Invocations", "Errors", "Duration", "ConcurrentExecutions"}
    errors = result.series["Errors"]
    assert errors.departed_at == period_of(result, errors_from) and errors.normal == 0
    assert errors.total == 4.0 * 20  # the last 20 minutes, all inside the window
    assert len(errors.points) <= 12 and errors.points == sorted(errors.points)
    assert result.series["Invocations"].departed_at is None and result.series["Invocations"].normal == 25
    duration = result.series["Duration"]
    assert (duration.timeout_ms, duration.at_timeout, duration.peak) == (30_000, 1, 29_800)
    assert duration.departed_at == period_of(result, minutes[-1]) and duration.normal == 300
    account = result.account
    assert account.concurrency_limit == 1000 and account.unreserved_concurrency_limit is not None
    assert (account.peak_concurrent_executions, account.peak_at) == (960, period_of(result, busy))
    assert [(t.function_name, t.peak_concurrent_executions, t.reserved_concurrency) for t in account.top_functions] == [
        ("batch-reports", 950, None),
        (FN, 2, 10),
    ]
    dumped = result.model_dump(mode="json")
    assert "Throttles" not in dumped["series"] and "reserved_concurrency" not in dumped["account"]["top_functions"][0]


def test_metrics_of_a_quiet_function_are_an_empty_series_not_an_error(clients, sample):
    result = diagnostics.get_function_metrics(clients, FN, minutes=10)
    assert result.error is None and result.series == {} and result.period_seconds == 60
    assert result.model_dump(mode="json")["series"] == {}


# -- get_recent_changes ---------------------------------------------------------------------------------------
def test_changes_name_each_change_with_who_made_it_newest_first(clients, sample, lab):
    clients.get("lambda").update_function_configuration(FunctionName=FN, Timeout=5)
    chaos_client(lab, "iam").delete_role_policy(RoleName=sample.role_name, PolicyName="s3-access")
    clients.get("lambda").get_function_configuration(FunctionName=FN)  # a read: not a change

    result = diagnostics.get_recent_changes(clients, FN)
    assert result.error is None and result.gaps == []
    first, second = result.events[:2]
    assert (first.event_name, first.event_source, first.resource, first.who) == (
        "DeleteRolePolicy",
        "iam.amazonaws.com",
        sample.role_name,
        "arn:aws:iam::123456789012:user/chaos",
    )
    assert (second.event_name, second.event_source, second.resource, second.who) == (
        "UpdateFunctionConfiguration",
        "lambda.amazonaws.com",
        FN,
        "arn:aws:iam::123456789012:user/lab-operator",
    )
    assert [e.time for e in result.events] == sorted((e.time for e in result.events), reverse=True)
    assert "GetFunctionConfiguration" not in {e.event_name for e in result.events}
    assert {"CreateFunction", "PutFunctionConcurrency", "CreateRole"} <= {e.event_name for e in result.events}
    assert result.history.last_modified and result.history.versions == []


def test_changes_follow_the_versions_aliases_key_and_secret_of_a_function(clients, sample):
    orders = create_orders_api(clients)
    record_baseline(clients, orders.function_name)
    lam = clients.get("lambda")
    lam.update_function_configuration(FunctionName=orders.function_name, Timeout=3)
    lam.get_waiter("function_updated").wait(FunctionName=orders.function_name, WaiterConfig={"Delay": 1})
    lam.publish_version(FunctionName=orders.function_name, Description="hotfix")
    lam.update_alias(
        FunctionName=orders.function_name,
        Name="live",
        FunctionVersion="2",
        RoutingConfig={"AdditionalVersionWeights": {"1": 0.25}},
    )
    clients.get("kms").disable_key(KeyId=orders.kms_key_id)
    clients.get("secretsmanager").delete_secret(SecretId=orders.secret_arn, RecoveryWindowInDays=7)

    result = diagnostics.get_recent_changes(clients, orders.function_name)
    assert result.error is None
    by_name = {e.event_name: e for e in result.events}
    assert by_name["DisableKey"].resource == orders.kms_key_arn
    assert by_name["DeleteSecret"].resource == orders.secret_arn
    assert [e.event_name for e in result.events[:4]] == [
        "DeleteSecret",
        "DisableKey",
        "UpdateAlias",
        "PublishVersion",
    ]
    history = result.history
    assert [(v.version, v.description) for v in history.versions] == [("2", "hotfix"), ("1", "initial release")]
    assert history.versions[0].code_sha256
    assert [(a.name, a.function_version, a.routing) for a in history.aliases] == [("live", "2", {"1": 0.25})]


def test_changes_are_capped_windowed_and_bounded_in_lookups(clients, lab):
    secrets = clients.get("secretsmanager")
    arns = [secrets.create_secret(Name=f"s{i}", SecretString="x")["ARN"] for i in range(5)]
    create_sample_account(clients, environment={f"SECRET_{i}_ARN": arn for i, arn in enumerate(arns)})
    record_baseline(clients, FN)
    now = datetime.now(UTC)
    for minute in range(30):
        lab.trail.record(
            "UpdateFunctionConfiguration20150331v2",
            "lambda.amazonaws.com",
            [("AWS::Lambda::Function", FN)],
            event_time=now - timedelta(minutes=minute),
        )
    lab.trail.record(
        "PutFunctionConcurrency20171031",
        "lambda.amazonaws.com",
        [("AWS::Lambda::Function", FN)],
        event_time=now - timedelta(hours=30),
    )

    result = diagnostics.get_recent_changes(clients, FN)
    assert len(result.events) == 20 and result.omitted > 10
    assert result.events[0].time == now.strftime("%Y-%m-%dT%H:%M:%SZ")
    # the function, its role and 4 of the 5 secrets its environment names: 6 lookups at most
    (skipped,) = [g for g in result.gaps if g.startswith("not looked up")]
    assert skipped.endswith(sorted(arns)[-1])
    older = diagnostics.get_recent_changes(clients, FN, hours=48)
    assert older.omitted == result.omitted + 1


def test_a_trail_that_cannot_be_read_is_a_gap_not_an_error(clients, sample, lab):
    lab.fail_requests("LookupEvents", service="cloudtrail", code="AccessDeniedException", message="not allowed")
    try:
        result = diagnostics.get_recent_changes(clients, FN)
    finally:
        lab.clear_failures()
    assert result.error is None and result.events == []
    assert result.gaps[0] == "CloudTrail: AccessDeniedException: not allowed"
    assert f"not looked up: {FN}" in result.gaps and result.history.last_modified
    assert result.model_dump(mode="json")["events"] == []


# -- get_dependencies -----------------------------------------------------------------------------------------
def test_dependencies_show_a_queue_visibility_below_six_times_the_timeout(clients, sample):
    consumer = create_queue_consumer(clients)
    record_baseline(clients, consumer.function_name)
    sqs = clients.get("sqs")
    sqs.set_queue_attributes(QueueUrl=consumer.queue_url, Attributes={"VisibilityTimeout": "60"})
    results_url = sqs.get_queue_url(QueueName=f"{consumer.function_name}-results")["QueueUrl"]
    for i in range(2):
        sqs.send_message(QueueUrl=results_url, MessageBody=f"result {i}")
    clients.get("lambda").put_function_event_invoke_config(
        FunctionName=consumer.function_name,
        DestinationConfig={"OnFailure": {"Destination": consumer.dead_letter_queue_arn}},
    )
    now = datetime.now(UTC)
    put(
        clients,
        "AWS/SQS",
        "ApproximateAgeOfOldestMessage",
        {"QueueName": consumer.queue_name},
        [(now - timedelta(minutes=30), 999.0), (now - timedelta(minutes=2), 120.0)],
    )

    result = diagnostics.get_dependencies(clients, consumer.function_name)
    assert result.error is None and result.gaps == [] and result.timeout_seconds == 30
    (mapping,) = result.event_source_mappings
    assert (mapping.uuid, mapping.event_source_arn, mapping.state, mapping.batch_size) == (
        consumer.event_source_mapping_uuid,
        consumer.queue_arn,
        "Enabled",
        10,
    )
    assert mapping.visibility_timeout_below_six_times_function_timeout is True
    assert (mapping.queue.visibility_timeout, mapping.queue.dead_letter_queue_arn, mapping.queue.max_receive_count) == (
        60,
        consumer.dead_letter_queue_arn,
        3,
    )
    assert mapping.queue.oldest_message_age_seconds == 120  # the latest point of the last 15 minutes
    assert [(q.used_as, q.variable, q.messages_visible, q.is_event_source) for q in result.queues] == [
        ("destination_on_failure", None, 0, False),
        ("named_in_environment", "RESULTS_QUEUE_URL", 2, False),
    ]
    assert result.queues[1].queue_arn.endswith(":queue-consumer-results")
    sqs.set_queue_attributes(QueueUrl=consumer.queue_url, Attributes={"VisibilityTimeout": "180"})
    (healthy,) = diagnostics.get_dependencies(clients, consumer.function_name).event_source_mappings
    assert healthy.visibility_timeout_below_six_times_function_timeout is False  # shown: false is a finding too


def test_dependencies_show_a_deleted_secret_a_missing_parameter_and_queue_and_a_key_the_role_cannot_use(
    clients, sample
):
    ssm = clients.get("ssm")
    ssm.put_parameter(Name="/orders-api/config", Value=CANARY_SECRET, Type="SecureString")
    sqs = clients.get("sqs")
    audit = sqs.create_queue(QueueName="orders-audit")["QueueUrl"]
    environment = {
        "CONFIG_PARAMETER": "/orders-api/config",
        "FLAGS_PARAMETER": "/orders-api/flags",
        "AUDIT_QUEUE_URL": audit,
        "DB_PASSWORD": CANARY_SECRET,
    }
    orders = create_orders_api(clients, environment=environment)
    record_baseline(clients, orders.function_name)
    sqs.delete_queue(QueueUrl=audit)
    clients.get("secretsmanager").delete_secret(SecretId=orders.secret_arn, RecoveryWindowInDays=7)
    account = orders.function_arn.split(":")[4]
    clients.get("kms").put_key_policy(
        KeyId=orders.kms_key_id,
        PolicyName="default",
        Policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"AWS": f"arn:aws:iam::{account}:root"},
                        "Action": "kms:*",
                        "Resource": "*",
                    }
                ],
            }
        ),
    )
    now = datetime.now(UTC)
    put(
        clients,
        "AWS/DynamoDB",
        "WriteThrottleEvents",
        {"TableName": orders.table_name},
        [(now - timedelta(minutes=m), 7.0) for m in (50, 3)],
    )

    result = diagnostics.get_dependencies(clients, orders.function_name)
    assert result.error is None and result.gaps == []
    (secret,) = result.secrets
    assert (secret.secret_arn, secret.variable, secret.exists, secret.scheduled_for_deletion) == (
        orders.secret_arn,
        "PAYMENT_SECRET_ARN",
        True,
        True,
    )
    assert secret.deleted_date
    assert [(p.name, p.variable, p.exists) for p in result.parameters] == [
        ("/orders-api/config", "CONFIG_PARAMETER", True),
        ("/orders-api/flags", "FLAGS_PARAMETER", False),
    ]
    (queue,) = result.queues
    assert (queue.queue_arn, queue.used_as, queue.variable, queue.exists) == (
        f"arn:aws:sqs:us-east-1:{account}:orders-audit",
        "named_in_environment",
        "AUDIT_QUEUE_URL",
        False,
    )
    (key,) = result.kms_keys
    assert (key.key_arn, key.key_state, key.role_may_decrypt) == (orders.kms_key_arn, "Enabled", False)
    (table,) = result.tables
    assert (table.table_name, table.variable, table.status, table.billing_mode) == (
        orders.table_name,
        "TABLE_NAME",
        "ACTIVE",
        "PROVISIONED",
    )
    assert (table.write_throttle_events, table.read_throttle_events) == (14, None)
    text = result.model_dump_json()
    assert CANARY_SECRET not in text and "DB_PASSWORD" not in text and audit not in text
    dumped = result.model_dump(mode="json")
    assert dumped["parameters"][0] == {"name": "/orders-api/config", "variable": "CONFIG_PARAMETER"}
    assert dumped["parameters"][1]["exists"] is False


def test_tables_the_role_names_are_read_without_the_environment(clients, sample):
    orders = create_orders_api(clients)
    record_baseline(clients, orders.function_name)
    lam = clients.get("lambda")
    variables = lam.get_function_configuration(FunctionName=orders.function_name)["Environment"]["Variables"]
    variables.pop("TABLE_NAME")
    lam.update_function_configuration(FunctionName=orders.function_name, Environment={"Variables": variables})
    (table,) = diagnostics.get_dependencies(clients, orders.function_name).tables
    assert (table.table_name, table.variable, table.status) == (orders.table_name, None, "ACTIVE")


# -- the lab's trail ------------------------------------------------------------------------------------------
def test_the_lab_trail_records_writes_only_and_answers_lookups_as_cloudtrail_does(clients, sample, lab):
    lam, trail = clients.get("lambda"), clients.get("cloudtrail")
    time.sleep(1)  # StartTime travels in whole seconds: the sample's own creation is before this one
    started = datetime.now(UTC)
    for seconds in (3, 4, 5):
        lam.update_function_configuration(FunctionName=FN, Timeout=seconds)
    lam.put_function_concurrency(FunctionName=FN, ReservedConcurrentExecutions=3)
    lab.fail_requests("PutFunctionConcurrency", code="ResourceConflictException", status=409)
    with pytest.raises(lam.exceptions.ClientError):
        lam.put_function_concurrency(FunctionName=FN, ReservedConcurrentExecutions=4)  # failed: nothing changed
    lam.list_functions()

    def lookup(**kwargs):
        return trail.lookup_events(StartTime=started, **kwargs)

    events = lookup(LookupAttributes=[{"AttributeKey": "ResourceName", "AttributeValue": FN}])["Events"]
    assert [e["EventName"] for e in events] == [
        "PutFunctionConcurrency20171031",  # the failed one: recorded with its errorCode, as CloudTrail does
        "PutFunctionConcurrency20171031",
        "UpdateFunctionConfiguration20150331v2",
        "UpdateFunctionConfiguration20150331v2",
        "UpdateFunctionConfiguration20150331v2",
    ]
    failed = json.loads(events[0]["CloudTrailEvent"])
    assert (failed["errorCode"], failed["errorMessage"]) == (
        "ResourceConflictException",
        "the lab failed this request on purpose",
    )
    first = events[1]
    assert "errorCode" not in json.loads(first["CloudTrailEvent"])
    assert first["EventSource"] == "lambda.amazonaws.com" and first["Username"] == "lab-operator"
    assert first["Resources"] == [{"ResourceType": "AWS::Lambda::Function", "ResourceName": FN}]
    detail = json.loads(first["CloudTrailEvent"])
    assert detail["userIdentity"]["arn"] == "arn:aws:iam::123456789012:user/lab-operator"
    assert detail["eventName"] == "PutFunctionConcurrency20171031" and detail["readOnly"] is False
    # One page at a time, newest first, by EventName too.
    page = lookup(
        LookupAttributes=[{"AttributeKey": "EventName", "AttributeValue": "UpdateFunctionConfiguration20150331v2"}],
        MaxResults=2,
    )
    rest = lookup(
        LookupAttributes=[{"AttributeKey": "EventName", "AttributeValue": "UpdateFunctionConfiguration20150331v2"}],
        MaxResults=2,
        NextToken=page["NextToken"],
    )
    assert len(page["Events"]) == 2 and len(rest["Events"]) == 1 and "NextToken" not in rest
    assert page["Events"][0]["EventTime"] >= page["Events"][1]["EventTime"] >= rest["Events"][0]["EventTime"]
    assert lookup(EndTime=started)["Events"] == []
    with pytest.raises(trail.exceptions.ClientError, match="InvalidMaxResults"):
        lookup(MaxResults=51)
    lab.reset()  # a fresh account has no history
    assert trail.lookup_events()["Events"] == []


def test_the_lab_refuses_a_direct_upload_larger_than_lambda_takes_and_its_trail_records_the_refusal(clients, sample):
    from chaos.kinds.code_upload_rejected import oversized_package

    lam, trail = clients.get("lambda"), clients.get("cloudtrail")
    time.sleep(1)  # StartTime travels in whole seconds
    started = datetime.now(UTC)
    before = lam.get_function_configuration(FunctionName=FN)["CodeSha256"]
    with pytest.raises(lam.exceptions.ClientError) as refused:
        lam.update_function_code(FunctionName=FN, ZipFile=oversized_package("service", "handler"))
    error = refused.value.response["Error"]
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 413
    assert (error["Code"], error["Message"]) == (
        "RequestEntityTooLargeException",
        "Request must be smaller than 70167211 bytes for the UpdateFunctionCode operation",
    )
    assert lam.get_function_configuration(FunctionName=FN)["CodeSha256"] == before  # nothing changed
    (event,) = trail.lookup_events(
        LookupAttributes=[{"AttributeKey": "ResourceName", "AttributeValue": FN}], StartTime=started
    )["Events"]
    assert event["EventName"].startswith("UpdateFunctionCode")
    assert json.loads(event["CloudTrailEvent"])["errorCode"] == "RequestEntityTooLargeException"
    # The responder's reading of the trail says the call failed.
    (change,) = [c for c in diagnostics.get_recent_changes(clients, FN).events if c.event_name == "UpdateFunctionCode"]
    assert change.error_code == "RequestEntityTooLargeException"


def test_the_lab_trail_names_queues_keys_secrets_and_network_resources_as_cloudtrail_does(clients, sample, lab):
    orders = create_orders_api(clients)
    chaos = {s: chaos_client(lab, s) for s in ("kms", "secretsmanager", "sqs", "ec2")}
    queue = clients.get("sqs").create_queue(QueueName="q1")["QueueUrl"]
    chaos["sqs"].set_queue_attributes(QueueUrl=queue, Attributes={"VisibilityTimeout": "5"})
    chaos["kms"].disable_key(KeyId=orders.kms_key_id)
    chaos["secretsmanager"].delete_secret(SecretId=orders.secret_arn, RecoveryWindowInDays=7)
    chaos["ec2"].revoke_security_group_egress(
        GroupId=sample.security_group_id,
        IpPermissions=[{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}],
    )
    named = {
        "arn:aws:sqs:us-east-1:123456789012:q1": "SetQueueAttributes",
        queue: "SetQueueAttributes",
        orders.kms_key_arn: "DisableKey",
        orders.secret_arn: "DeleteSecret",
        sample.security_group_id: "RevokeSecurityGroupEgress",
    }
    trail = clients.get("cloudtrail")
    for resource, event in named.items():
        (newest, *_) = trail.lookup_events(
            LookupAttributes=[{"AttributeKey": "ResourceName", "AttributeValue": resource}]
        )["Events"]
        assert (newest["EventName"], newest["Username"]) == (event, "chaos"), resource


# -- scope, schemas, size ------------------------------------------------------------------------------------
@pytest.mark.parametrize("tool", NEW_TOOLS)
def test_the_tools_refuse_a_function_that_is_not_onboarded(clients, sample, tool):
    recording = Recording(clients)
    response = call_raw(build(recording), KEY, tool_call(tool, {"lambda_name": "someone-elses-function"}))
    result = response.json()["result"]
    assert result["isError"] is True and "is not onboarded" in result["content"][0]["text"]
    assert set(recording.services) <= {"dynamodb"}


def test_the_tools_answer_over_mcp_as_their_output_schemas_say(clients, sample):
    orders = create_orders_api(clients)
    record_baseline(clients, orders.function_name)
    put(clients, "AWS/Lambda", "Errors", {"FunctionName": orders.function_name}, [(datetime.now(UTC), 1.0)])

    async def go():
        async with asgi_client(build(clients)) as client, mcp_session(URL, KEY, http_client=client) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            calls = {t: await session.call_tool(t, {"lambda_name": orders.function_name}) for t in NEW_TOOLS}
            return tools, calls

    tools, calls = anyio.run(go)
    for name in NEW_TOOLS:
        assert tools[name].annotations.readOnlyHint is True
        assert not calls[name].isError, calls[name].content
        jsonschema.validate(calls[name].structuredContent, tools[name].outputSchema)
        assert "error" not in calls[name].structuredContent
    assert calls["get_function_metrics"].structuredContent["series"]["Errors"]["departed_at"]
    assert calls["get_dependencies"].structuredContent["kms_keys"][0]["role_may_decrypt"] is True
    assert tools["get_recent_changes"].inputSchema["properties"]["hours"]["default"] == 24


@pytest.mark.parametrize("size", [100, 100_000])
def test_answers_stay_small_whatever_the_account_holds(lab, clients, size):
    try:
        rows = measure(lab, clients, size)
    finally:
        lab.trail.resize(TRAIL_CAPACITY)
    for tool, points, nbytes, ms, _ in rows:
        print(f"{tool} at {points:,} data points: {nbytes:,} bytes in {ms:.0f} ms")
        assert nbytes < ANSWER_BOUND, (tool, nbytes)
    metrics, changes, dependencies = (row[-1] for row in rows)
    if size == 100_000:  # the volume is there: cut to the bounds, with what was left out said
        # 12 periods; the one in progress may hold no point yet
        assert all(len(s.points) >= 11 for s in metrics.series.values()) and metrics.series["Errors"].departed_at
        assert len(changes.events) == 20 and changes.omitted >= 30 and changes.gaps
        assert dependencies.tables[0].read_throttle_events > 100_000 / 3
