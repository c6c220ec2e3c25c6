"""The sample workload ``data-processor``, emulated against whatever account it is given.

moto records configuration but enforces none of it (a revoked policy denies nothing, reserved
concurrency 0 throttles nothing, a removed egress rule blocks nothing). So the workload reads the
account state the real function would run into, decides each invocation's fate from it, and leaves
only the traces the real function and the Lambda service would leave: runtime log lines in
``/aws/lambda/<name>`` (none at all when its role cannot write logs), ``AWS/Lambda`` metrics, and a
CloudWatch alarm notification on the incidents topic. Nothing names the injected fault.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field

from incident_responder.account_state import (
    NetworkState,
    managed_policy_documents,
    read_function_configuration,
)
from incident_responder.aws import AwsClients
from incident_responder.iam_policy import is_allowed
from incident_responder.lab.account import INCIDENT_TOPIC, INPUT_KEY

# A public S3 address in us-east-1: where the function's HTTPS connection goes.
S3_DESTINATION = ipaddress.ip_address("52.217.0.10")
EPHEMERAL_PORTS = (1024, 65535)
REGION_NAMES = {
    "us-east-1": "US East (N. Virginia)",
    "us-east-2": "US East (Ohio)",
    "us-west-2": "US West (Oregon)",
    "eu-west-1": "Europe (Ireland)",
    "eu-central-1": "Europe (Frankfurt)",
}


@dataclass(frozen=True)
class WorkloadProfile:
    """What one invocation of the sample function needs; the function's own nature, not its config."""

    work_seconds_at_512mb: float = 2.4  # CPU scales with memory, as in Lambda
    peak_memory_mb: int = 300
    connect_timeout_seconds: float = 5.0
    connect_attempts: int = 2
    init_seconds: float = 0.35


class InvocationOutcome(BaseModel):
    request_id: str
    status: Literal["succeeded", "failed", "timed_out", "throttled"]
    error_type: str | None = None
    error_message: str | None = None
    duration_ms: float = 0.0
    logged: bool = Field(description="whether the invocation's log lines reached CloudWatch Logs")


class BurstResult(BaseModel):
    function_name: str
    invocations: list[InvocationOutcome]
    alert: dict[str, Any] | None = None
    alert_message_id: str | None = None

    @property
    def healthy(self) -> bool:
        return all(i.status == "succeeded" and i.logged for i in self.invocations)


def _covers(cidr: str | None, address: ipaddress.IPv4Address) -> bool:
    return bool(cidr) and address in ipaddress.ip_network(cidr, strict=False)


def _protocol_matches(protocol: str, port: int, port_range: dict[str, Any] | None) -> bool:
    if str(protocol) == "-1":
        return True
    if str(protocol).lower() not in ("6", "tcp"):
        return False
    if not port_range:
        return True
    return int(port_range.get("From", 0)) <= port <= int(port_range.get("To", 65535))


def _nacl_allows(entries: list[dict[str, Any]], *, egress: bool, port: int) -> bool:
    """NACLs are stateless and ordered: the lowest-numbered matching rule decides; none matching denies."""
    for entry in sorted((e for e in entries if bool(e.get("Egress")) == egress), key=lambda e: e["RuleNumber"]):
        if not _covers(entry.get("CidrBlock"), S3_DESTINATION):
            continue
        if _protocol_matches(entry.get("Protocol", "-1"), port, entry.get("PortRange")):
            return entry.get("RuleAction") == "allow"
    return False


def egress_to_s3_allowed(network: NetworkState) -> bool:
    """Can an HTTPS connection from the function reach S3 (and its replies come back)?"""
    if not network.in_vpc:
        return True
    # Security groups are stateful: one egress rule suffices, replies are allowed.
    sg_ok = any(
        _protocol_matches(
            rule.get("IpProtocol", "-1"), 443, {"From": rule.get("FromPort", 0), "To": rule.get("ToPort", 65535)}
        )
        and (
            any(_covers(r.get("CidrIp"), S3_DESTINATION) for r in rule.get("IpRanges", []))
            or bool(rule.get("PrefixListIds"))
        )
        for group in network.security_groups
        for rule in group.egress_rules
    )
    acl_ok = all(
        _nacl_allows(subnet.entries, egress=True, port=443)
        and any(_nacl_allows(subnet.entries, egress=False, port=p) for p in EPHEMERAL_PORTS)
        for subnet in network.subnets
    )
    return sg_ok and acl_ok


def _ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _alarm_time() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}+0000"


def _traceback(error_type: str, message: str, line: int, code: str) -> str:
    return (
        f"[ERROR] {error_type}: {message}\nTraceback (most recent call last):\n"
        f'  File "/var/task/app.py", line {line}, in handler\n    {code}'
    )


class DataProcessor:
    """Invokes the sample function as Lambda would, against the account behind ``clients``."""

    def __init__(
        self,
        clients: AwsClients,
        function_name: str = "data-processor",
        profile: WorkloadProfile | None = None,
        alert_topic_arn: str | None = None,
    ):
        self.clients = clients
        self.function_name = function_name
        self.profile = profile or WorkloadProfile()
        # Where the function's alarms notify (AlarmActions); by default the lab's "incident-alerts" topic.
        self.alert_topic_arn = alert_topic_arn or os.environ.get("INCIDENT_TOPIC_ARN")

    # -- decisions -------------------------------------------------------------------------------
    def _policies(self, config: Any) -> list[dict[str, Any]]:
        docs = list(config.role.inline_policies.values())
        docs += managed_policy_documents(self.clients, config.role.attached_policy_arns).values()
        return docs

    def invoke(
        self,
        invocations: int = 3,
        log_lines: list[str] | None = None,
        app_error: str | None = None,
        *,
        notify: bool = True,
    ) -> BurstResult:
        """One concurrent burst of ``invocations``, then an alarm notification if it went badly (``notify``
        False: the alarm is evaluated and returned but not sent, as a verification's own traffic must not
        start another incident)."""
        config = read_function_configuration(self.clients, self.function_name)
        lam_config = self.clients.get("lambda").get_function_configuration(FunctionName=self.function_name)
        bucket = lam_config.get("Environment", {}).get("Variables", {}).get("INPUT_BUCKET", "")
        account = lam_config["FunctionArn"].split(":")[4]
        region = self.clients.region
        policies = self._policies(config)
        log_group = f"/aws/lambda/{self.function_name}"
        log_arn = f"arn:aws:logs:{region}:{account}:log-group:{log_group}:log-stream:"
        can_log = is_allowed(policies, "logs:CreateLogStream", log_arn) and is_allowed(
            policies, "logs:PutLogEvents", log_arn
        )
        runnable = invocations if config.reserved_concurrency is None else min(invocations, config.reserved_concurrency)
        facts = {
            "network_ok": egress_to_s3_allowed(config.network),
            "can_get": is_allowed(policies, "s3:GetObject", f"arn:aws:s3:::{bucket}/{INPUT_KEY}"),
            "can_put": is_allowed(
                policies, "s3:PutObject", f"arn:aws:s3:::{bucket}/{INPUT_KEY.replace('incoming/', 'processed/')}"
            ),
            "role_arn": config.role.role_arn,
            "bucket": bucket,
        }
        start = self._burst_start(log_group)
        outcomes: list[InvocationOutcome] = []
        for index in range(invocations):
            request_id = str(uuid.uuid4())
            if index >= runnable:
                outcomes.append(
                    InvocationOutcome(
                        request_id=request_id,
                        status="throttled",
                        error_type="TooManyRequestsException",
                        error_message="Rate Exceeded.",
                        logged=False,
                    )
                )
                continue
            outcome, lines = self._run_one(request_id, start, config, facts, log_lines or [], app_error)
            if can_log:
                self._write_logs(log_group, start, request_id, lines)
            outcomes.append(outcome.model_copy(update={"logged": can_log}))
        result = BurstResult(function_name=self.function_name, invocations=outcomes)
        self._put_metrics(outcomes, start)
        alert = self._alarm(result, start, account, region, log_group)
        if alert is not None and not notify:
            return result.model_copy(update={"alert": alert})
        if alert is not None:
            topic_arn = self.alert_topic_arn or f"arn:aws:sns:{region}:{account}:{INCIDENT_TOPIC}"
            region_name = REGION_NAMES.get(region, region)
            message_id = self.clients.get("sns").publish(
                TopicArn=topic_arn,
                Subject=f'ALARM: "{alert["AlarmName"]}" in {region_name}'[:100],
                Message=json.dumps(alert),
            )["MessageId"]
            result = result.model_copy(update={"alert": alert, "alert_message_id": message_id})
        return result

    def _run_one(
        self,
        request_id: str,
        start: datetime,
        config: Any,
        facts: dict[str, Any],
        extra: list[str],
        app_error: str | None,
    ) -> tuple[InvocationOutcome, list[tuple[float, str]]]:
        p = self.profile
        lines: list[tuple[float, str]] = [(0.0, f"START RequestId: {request_id} Version: $LATEST")]

        def info(at: float, text: str) -> None:
            lines.append((at, f"[INFO]\t{_ts(start + timedelta(seconds=at))}\t{request_id}\t{text}"))

        key = INPUT_KEY
        info(0.01, f"Processing s3://{facts['bucket']}/{key}")
        for raw in extra:
            lines.append((0.02, raw))
        t = 0.02
        error: tuple[str, str, str] | None = None  # (type, message, log text)
        oom = False
        memory_used = 88
        url = f"https://{facts['bucket']}.s3.amazonaws.com/{key}"
        if not facts["network_ok"]:
            t += p.connect_timeout_seconds * p.connect_attempts
            msg = f'Connect timeout on endpoint URL: "{url}"'
            error = (
                "ConnectTimeoutError",
                msg,
                _traceback(
                    "ConnectTimeoutError",
                    msg,
                    10,
                    'body = s3.get_object(Bucket=os.environ["INPUT_BUCKET"], Key=key)["Body"].read()',
                ),
            )
        elif not facts["can_get"]:
            t += 0.08
            msg = self._access_denied("GetObject", "s3:GetObject", f"{facts['bucket']}/{key}", facts["role_arn"])
            error = (
                "ClientError",
                msg,
                _traceback(
                    "ClientError",
                    msg,
                    10,
                    'body = s3.get_object(Bucket=os.environ["INPUT_BUCKET"], Key=key)["Body"].read()',
                ),
            )
        elif app_error:
            t += 0.12
            etype, _, emsg = app_error.partition(":")
            error = (
                etype.strip(),
                emsg.strip(),
                _traceback(etype.strip(), emsg.strip(), 11, "orders = [transform(o) for o in json.loads(body)]"),
            )
        elif config.memory_size < p.peak_memory_mb:
            t += 1.2
            oom = True
            memory_used = config.memory_size
        else:
            t += p.work_seconds_at_512mb * 512 / min(config.memory_size, 1769)
            memory_used = p.peak_memory_mb + 1
            if not facts["can_put"]:
                target = f"{facts['bucket']}/{key.replace('incoming/', 'processed/')}"
                msg = self._access_denied("PutObject", "s3:PutObject", target, facts["role_arn"])
                error = ("ClientError", msg, _traceback("ClientError", msg, 12, "s3.put_object(...)"))
        timed_out = t > config.timeout
        if timed_out:
            t = float(config.timeout)
            lines.append((t, f"{_ts(start + timedelta(seconds=t))} {request_id} Task timed out after {t:.2f} seconds"))
            status, etype, emsg = "timed_out", "Sandbox.Timedout", f"Task timed out after {t:.2f} seconds"
        elif oom:
            lines.append(
                (t, f"RequestId: {request_id} Error: Runtime exited with error: signal: killed\nRuntime.ExitError")
            )
            status, etype, emsg = "failed", "Runtime.ExitError", "Runtime exited with error: signal: killed"
        elif error:
            lines.append((t, error[2]))
            status, etype, emsg = "failed", error[0], error[1]
        else:
            info(t, f"Processed 20 orders -> s3://{facts['bucket']}/{key.replace('incoming/', 'processed/')}")
            status, etype, emsg = "succeeded", None, None
        duration_ms = t * 1000
        lines.append((t, f"END RequestId: {request_id}"))
        lines.append(
            (
                t,
                f"REPORT RequestId: {request_id}\tDuration: {duration_ms:.2f} ms\tBilled Duration: "
                f"{math.ceil(duration_ms)} ms\tMemory Size: {config.memory_size} MB\tMax Memory Used: "
                f"{memory_used} MB\tInit Duration: {p.init_seconds * 1000:.2f} ms"
                + ("\tStatus: timeout" if timed_out else ""),
            )
        )
        outcome = InvocationOutcome(
            request_id=request_id,
            status=status,
            error_type=etype,
            error_message=emsg,
            duration_ms=round(duration_ms, 2),
            logged=False,
        )
        return outcome, lines

    def _burst_start(self, log_group: str) -> datetime:
        """Now, or just after the group's newest event: simulated durations never reorder bursts."""
        now = datetime.now(UTC)
        try:
            streams = self.clients.get("logs").describe_log_streams(
                logGroupName=log_group, orderBy="LastEventTime", descending=True, limit=1
            )["logStreams"]
        except self.clients.get("logs").exceptions.ResourceNotFoundException:
            return now
        if streams and streams[0].get("lastEventTimestamp"):
            latest = datetime.fromtimestamp((streams[0]["lastEventTimestamp"] + 1) / 1000, UTC)
            return max(now, latest)
        return now

    @staticmethod
    def _access_denied(operation: str, action: str, resource: str, role_arn: str) -> str:
        role_name = role_arn.rsplit("/", 1)[-1]
        account = role_arn.split(":")[4]
        return (
            f"An error occurred (AccessDenied) when calling the {operation} operation: User: "
            f"arn:aws:sts::{account}:assumed-role/{role_name}/{role_name.removesuffix('-role')} is not authorized "
            f'to perform: {action} on resource: "arn:aws:s3:::{resource}" because no identity-based policy '
            f"allows the {action} action"
        )

    # -- traces ----------------------------------------------------------------------------------
    def _write_logs(self, log_group: str, start: datetime, request_id: str, lines: list[tuple[float, str]]) -> None:
        logs = self.clients.get("logs")
        # One execution environment per concurrent invocation, so one stream each, named as Lambda does.
        stream = f"{start:%Y/%m/%d}/[$LATEST]{uuid.uuid4().hex}"
        try:
            logs.create_log_stream(logGroupName=log_group, logStreamName=stream)
        except logs.exceptions.ResourceNotFoundException:
            logs.create_log_group(logGroupName=log_group)
            logs.create_log_stream(logGroupName=log_group, logStreamName=stream)
        base = int(start.timestamp() * 1000)
        events = [{"timestamp": base + int(at * 1000), "message": text} for at, text in lines]
        events.sort(key=lambda e: e["timestamp"])
        logs.put_log_events(logGroupName=log_group, logStreamName=stream, logEvents=events)

    def _put_metrics(self, outcomes: list[InvocationOutcome], start: datetime) -> None:
        dims = [{"Name": "FunctionName", "Value": self.function_name}]
        ran = [o for o in outcomes if o.status != "throttled"]
        data = [
            {"MetricName": "Invocations", "Value": len(ran), "Unit": "Count"},
            {"MetricName": "Errors", "Value": sum(o.status != "succeeded" for o in ran), "Unit": "Count"},
            {"MetricName": "Throttles", "Value": len(outcomes) - len(ran), "Unit": "Count"},
        ] + [{"MetricName": "Duration", "Value": o.duration_ms, "Unit": "Milliseconds"} for o in ran]
        for datum in data:
            datum.update(Dimensions=dims, Timestamp=start)
        self.clients.get("cloudwatch").put_metric_data(Namespace="AWS/Lambda", MetricData=data)

    def _alarm(
        self, result: BurstResult, start: datetime, account: str, region: str, log_group: str
    ) -> dict[str, Any] | None:
        """The CloudWatch alarm notification the function's standard alarms would send, if any fires."""
        ran = [o for o in result.invocations if o.status != "throttled"]
        errors = sum(o.status != "succeeded" for o in ran)
        throttles = len(result.invocations) - len(ran)
        if errors:
            name, metric, namespace, value = f"{self.function_name}-errors", "Errors", "AWS/Lambda", errors
            dims = [{"value": self.function_name, "name": "FunctionName"}]
            op, threshold, missing = "GreaterThanOrEqualToThreshold", 1.0, "notBreaching"
        elif throttles:
            name, metric, namespace, value = f"{self.function_name}-throttles", "Throttles", "AWS/Lambda", throttles
            dims = [{"value": self.function_name, "name": "FunctionName"}]
            op, threshold, missing = "GreaterThanOrEqualToThreshold", 1.0, "notBreaching"
        elif ran and not any(o.logged for o in ran):
            # Invocations happened but the log group received nothing: the heartbeat alarm on IncomingLogEvents.
            name, metric, namespace, value = f"{self.function_name}-no-logs", "IncomingLogEvents", "AWS/Logs", 0
            dims = [{"value": log_group, "name": "LogGroupName"}]
            op, threshold, missing = "LessThanThreshold", 1.0, "breaching"
        else:
            return None
        stamp = start.strftime("%d/%m/%y %H:%M:%S")
        if missing == "breaching":
            reason = (
                "Threshold Crossed: no datapoints were received for 1 period and 1 missing datapoint was "
                "treated as [Breaching]."
            )
        else:
            reason = (
                f"Threshold Crossed: 1 datapoint [{float(value)} ({stamp})] was greater than or equal to the "
                f"threshold ({threshold})."
            )
        return {
            "AlarmName": name,
            "AlarmDescription": f"{self.function_name} {metric} alarm",
            "AWSAccountId": account,
            "AlarmConfigurationUpdatedTimestamp": "2026-01-01T00:00:00.000+0000",
            "NewStateValue": "ALARM",
            "NewStateReason": reason,
            "StateChangeTime": _alarm_time(),
            "Region": REGION_NAMES.get(region, region),
            "AlarmArn": f"arn:aws:cloudwatch:{region}:{account}:alarm:{name}",
            "OldStateValue": "OK",
            "OKActions": [],
            "AlarmActions": [self.alert_topic_arn or f"arn:aws:sns:{region}:{account}:{INCIDENT_TOPIC}"],
            "InsufficientDataActions": [],
            "Trigger": {
                "MetricName": metric,
                "Namespace": namespace,
                "StatisticType": "Statistic",
                "Statistic": "SUM",
                "Unit": None,
                "Dimensions": dims,
                "Period": 60,
                "EvaluationPeriods": 1,
                "DatapointsToAlarm": 1,
                "ComparisonOperator": op,
                "Threshold": threshold,
                "TreatMissingData": missing,
                "EvaluateLowSampleCountPercentage": "",
            },
        }
