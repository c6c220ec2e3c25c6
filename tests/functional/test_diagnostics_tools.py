"""Each diagnostics tool against each fault, the AWS error paths, and log volume."""

from __future__ import annotations

import json
import time

import pytest
from botocore.stub import Stubber

from chaos import FaultInjector
from incident_responder.core.aws import AwsClients
from incident_responder.core.encoding import iso
from incident_responder.investigation import diagnostics
from incident_responder.lab.log_volume import fill_log_group
from incident_responder.lab.workloads.data_processor import DataProcessor
from tests.conftest import CANARY_SECRET

FN = "data-processor"


def break_and_run(clients, kind, **params):
    getattr(FaultInjector.for_function(FN, clients=clients), kind)(**params)
    return DataProcessor(clients).invoke(3)


def drift_paths(clients) -> set[str]:
    return {d.path for d in diagnostics.get_config_drift(clients, FN).differences}


def test_healthy_function_every_tool(clients, sample):
    DataProcessor(clients).invoke(3)
    logs = diagnostics.get_recent_logs(clients, FN)
    assert logs.error is None and logs.log_group == "/aws/lambda/data-processor"
    assert any("Processed 20 orders" in e.message for e in logs.events)
    iam = diagnostics.get_iam_state(clients, FN)
    assert iam.role_name == "data-processor-role"
    assert set(iam.inline_policies) == {"s3-access", "cloudwatch-logs", "vpc-access", "failed-events"}
    assert iam.inline_policies["s3-access"]["Statement"][0]["Action"] == ["s3:GetObject", "s3:PutObject"]
    config = diagnostics.get_lambda_config(clients, FN)
    assert (config.MemorySize, config.Timeout, config.ReservedConcurrentExecutions) == (512, 30, 10)
    assert config.Runtime == "python3.12" and config.Handler == "app.handler" and config.State is None
    assert config.VpcConfig.SecurityGroupIds == [sample.security_group_id]
    network = diagnostics.get_network_config(clients, FN)
    assert network.in_vpc and network.vpc_id == sample.vpc_id
    assert network.security_groups[0].egress_rules[0]["IpRanges"] == [{"CidrIp": "0.0.0.0/0"}]
    assert network.subnets[0].network_acl_id == sample.network_acl_id
    drift = diagnostics.get_config_drift(clients, FN)
    assert drift.error is None and not drift.drifted and drift.baseline_captured_at


def test_s3_revoked(clients, sample):
    break_and_run(clients, "iam_revoke", target="s3")
    assert any("AccessDenied" in e.message for e in diagnostics.get_recent_logs(clients, FN).events)
    assert "s3-access" not in diagnostics.get_iam_state(clients, FN).inline_policies
    drift = diagnostics.get_config_drift(clients, FN)
    (difference,) = drift.differences
    assert difference.path == "role.inline_policies.s3-access"
    assert difference.current is None and difference.baseline["Statement"][0]["Sid"] == "ReadInputWriteOutput"


def test_logs_revoked_leaves_logs_empty_but_iam_and_drift_show_it(clients, sample):
    break_and_run(clients, "iam_revoke", target="cloudwatch")
    assert diagnostics.get_recent_logs(clients, FN).events == []
    assert "cloudwatch-logs" not in diagnostics.get_iam_state(clients, FN).inline_policies
    assert drift_paths(clients) == {"role.inline_policies.cloudwatch-logs"}


@pytest.mark.parametrize("reserved", [0, 1])
def test_throttle(clients, sample, reserved):
    break_and_run(clients, "throttle", reserved_concurrency=reserved)
    # 0 must read as 0, not as "no reservation".
    assert diagnostics.get_lambda_config(clients, FN).ReservedConcurrentExecutions == reserved
    (difference,) = diagnostics.get_config_drift(clients, FN).differences
    assert (difference.path, difference.baseline, difference.current) == ("reserved_concurrency", 10, reserved)


def test_network_block(clients, sample):
    break_and_run(clients, "network_block")
    assert any("ConnectTimeoutError" in e.message for e in diagnostics.get_recent_logs(clients, FN).events)
    network = diagnostics.get_network_config(clients, FN)
    assert network.security_groups[0].egress_rules == []
    egress = [e for e in network.subnets[0].entries if e["Egress"]]
    assert egress[0]["RuleNumber"] == 1 and egress[0]["RuleAction"] == "deny"
    assert drift_paths(clients) == {
        f"network.security_groups.{sample.security_group_id}.egress_rules",
        f"network.subnets.{sample.subnet_id}.entries",
    }


def test_timeout(clients, sample):
    break_and_run(clients, "timeout", seconds=1)
    assert any(
        "Task timed out after 1.00 seconds" in e.message for e in diagnostics.get_recent_logs(clients, FN).events
    )
    assert diagnostics.get_lambda_config(clients, FN).Timeout == 1
    assert drift_paths(clients) == {"timeout"}


def test_memory(clients, sample):
    break_and_run(clients, "memory", mb=128)
    assert any("signal: killed" in e.message for e in diagnostics.get_recent_logs(clients, FN).events)
    assert diagnostics.get_lambda_config(clients, FN).MemorySize == 128
    assert drift_paths(clients) == {"memory_size"}


def test_application_error_shows_in_logs_with_no_drift(clients, sample):
    DataProcessor(clients).invoke(1, app_error="KeyError: 'order_id'")
    assert any(e.message.startswith("[ERROR] KeyError") for e in diagnostics.get_recent_logs(clients, FN).events)
    assert drift_paths(clients) == set()


def test_environment_variables_never_leave_any_tool(clients, sample):
    DataProcessor(clients).invoke(1)
    for tool in ("get_recent_logs", "get_iam_state", "get_lambda_config", "get_network_config", "get_config_drift"):
        text = getattr(diagnostics, tool)(clients, FN).model_dump_json()
        assert CANARY_SECRET not in text, tool
        assert "DB_PASSWORD" not in text, tool


def test_function_arn_is_accepted(clients, sample):
    config = diagnostics.get_lambda_config(clients, sample.function_arn)
    assert config.FunctionName == FN and config.error is None


def test_missing_function_is_an_error_field_in_every_tool(clients, sample):
    for tool in ("get_iam_state", "get_lambda_config", "get_network_config", "get_config_drift"):
        result = getattr(diagnostics, tool)(clients, "no-such-function")
        assert result.error, tool
        assert "Traceback" not in result.error
    assert "no baseline recorded" in diagnostics.get_config_drift(clients, "no-such-function").error
    assert "ResourceNotFoundException" in diagnostics.get_lambda_config(clients, "no-such-function").error
    assert "ResourceNotFoundException" in diagnostics.get_recent_logs(clients, "no-such-function").error


def test_access_denied_to_the_servers_own_role_is_an_error_field(clients, sample):
    denied = AwsClients(clients.session)
    stub = Stubber(denied.get("lambda"))
    message = "User: arn:aws:sts::123456789012:assumed-role/diagnostics/x is not authorized to perform: lambda:GetFunctionConfiguration"
    for _ in range(3):
        stub.add_client_error("get_function_configuration", "AccessDeniedException", message, 403)
    with stub:
        for tool in ("get_iam_state", "get_lambda_config", "get_network_config"):
            result = getattr(diagnostics, tool)(denied, FN)
            assert result.error.startswith("AccessDeniedException: User:"), tool


def test_unreachable_aws_is_an_error_field(lab_env, monkeypatch):
    from botocore.config import Config

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens on the discard port
    offline = AwsClients(config=Config(connect_timeout=0.5, retries={"max_attempts": 1}))
    for tool in ("get_recent_logs", "get_lambda_config", "get_iam_state", "get_network_config", "get_config_drift"):
        result = getattr(diagnostics, tool)(offline, FN)
        assert result.error.startswith("EndpointConnectionError"), (tool, result.error)


def test_logs_are_the_newest_30_in_time_order_folded_and_cut_to_500_chars(clients):
    fill_log_group(clients, "/aws/lambda/busy", 3000, streams=3, message_len=900, spacing_ms=10)
    result = diagnostics.get_recent_logs(clients, "busy")
    assert result.error is None
    # Streams interleave in time: the newest 30 of the group, whichever stream wrote them.
    written = sorted(
        (e["timestamp"], e["message"])
        for page in clients.get("logs").get_paginator("filter_log_events").paginate(logGroupName="/aws/lambda/busy")
        for e in page["events"]
    )
    oldest, newest = written[-30], written[-1]
    # Every one of them is "s<stream> e<index> xxx...": one line repeated with other numbers, folded into its
    # first occurrence, with the count and the last occurrence's time.
    (line,) = result.events
    assert line.count == 30 and line.message == oldest[1][:500] and line.truncated
    assert (line.timestamp, line.last_timestamp) == (
        iso(oldest[0] / 1000, "milliseconds"),
        iso(newest[0] / 1000, "milliseconds"),
    )
    assert len(json.dumps(result.model_dump())) < 1000


def test_logs_outside_the_window_are_not_returned(clients):
    logs = clients.get("logs")
    logs.create_log_group(logGroupName="/aws/lambda/old")
    logs.create_log_stream(logGroupName="/aws/lambda/old", logStreamName="s")
    an_hour_ago = int(time.time() * 1000) - 3_600_000
    logs.put_log_events(
        logGroupName="/aws/lambda/old", logStreamName="s", logEvents=[{"timestamp": an_hour_ago, "message": "old"}]
    )
    assert diagnostics.get_recent_logs(clients, "old", minutes=10).events == []
    assert [e.message for e in diagnostics.get_recent_logs(clients, "old", minutes=120).events] == ["old"]
