"""EMULATING a workload: the traces Lambda and CloudWatch leave of a burst: log lines in ``/aws/lambda/<name>``
(one stream per execution environment), ``AWS/Lambda`` metrics, and the CloudWatch alarm notification the function's
standard alarms would send."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from incident_responder.core.aws import AwsClients
from incident_responder.lab.account.sources import INCIDENT_TOPIC
from incident_responder.lab.emulation.invocation import (
    AccountView,
    AlarmSpec,
    BurstResult,
    InvocationOutcome,
    WorkloadProfile,
)

REGION_NAMES = {
    "us-east-1": "US East (N. Virginia)",
    "us-east-2": "US East (Ohio)",
    "us-west-2": "US West (Oregon)",
    "eu-west-1": "Europe (Ireland)",
    "eu-central-1": "Europe (Frankfurt)",
}


def _alarm_time() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}+0000"


class LambdaTraces:
    """What a burst leaves behind, written as Lambda and CloudWatch would (a :class:`Workload` is one)."""

    clients: AwsClients
    function_name: str
    profile: WorkloadProfile
    alert_topic_arn: str | None

    def _write_logs(self, view: AccountView, start: datetime, lines: list[tuple[float, str]]) -> None:
        logs = self.clients.get("logs")
        # One execution environment per concurrent invocation, so one stream each, named as Lambda does.
        stream = f"{start:%Y/%m/%d}/[{view.code.version}]{uuid.uuid4().hex}"
        try:
            logs.create_log_stream(logGroupName=view.log_group, logStreamName=stream)
        except logs.exceptions.ResourceNotFoundException:
            logs.create_log_group(logGroupName=view.log_group)
            logs.create_log_stream(logGroupName=view.log_group, logStreamName=stream)
        base = int(start.timestamp() * 1000)
        events = [{"timestamp": base + int(at * 1000), "message": text} for at, text in lines]
        events.sort(key=lambda e: e["timestamp"])
        logs.put_log_events(logGroupName=view.log_group, logStreamName=stream, logEvents=events)

    def _put_metrics(self, outcomes: list[InvocationOutcome], start: datetime) -> None:
        dims = [{"Name": "FunctionName", "Value": self.function_name}]
        ran = [o for o in outcomes if o.status != "throttled"]
        data = [
            {"MetricName": "Invocations", "Value": len(ran), "Unit": "Count"},
            {"MetricName": "Errors", "Value": sum(o.status != "succeeded" for o in ran), "Unit": "Count"},
            {"MetricName": "Throttles", "Value": len(outcomes) - len(ran), "Unit": "Count"},
        ]
        # A request the service refused before the function ran has no duration.
        data += [
            {"MetricName": "Duration", "Value": o.duration_ms, "Unit": "Milliseconds"} for o in ran if o.duration_ms
        ]
        if ran:
            data.append({"MetricName": "ConcurrentExecutions", "Value": len(ran), "Unit": "Count"})
        for datum in data:
            datum.update(Dimensions=dims, Timestamp=start)
        cloudwatch = self.clients.get("cloudwatch")
        history = self._healthy_history(start)
        for first in range(0, len(history), 500):
            cloudwatch.put_metric_data(Namespace="AWS/Lambda", MetricData=history[first : first + 500])
        cloudwatch.put_metric_data(Namespace="AWS/Lambda", MetricData=data)

    # Minutes of ordinary traffic Lambda would have published before the function's first burst (0: none).
    history_minutes: int = 0

    def _healthy_history(self, start: datetime) -> list[dict[str, Any]]:
        """The function's ordinary traffic over the half hour before its first burst in this lab (one invocation a
        minute, no errors), as Lambda would have published it: what its metrics' departures are measured from."""
        if not self.history_minutes:
            return []
        dims = [{"Name": "FunctionName", "Value": self.function_name}]
        cloudwatch = self.clients.get("cloudwatch")
        seen = cloudwatch.list_metrics(Namespace="AWS/Lambda", MetricName="Invocations", Dimensions=dims)["Metrics"]
        if seen:
            return []
        duration = round(self.profile.work_seconds_at_512mb * 1000 * 0.9, 2)
        out: list[dict[str, Any]] = []
        for minute in range(self.history_minutes, 0, -1):
            at = start - timedelta(minutes=minute)
            for name, value, unit in (
                ("Invocations", 1.0, "Count"),
                ("Errors", 0.0, "Count"),
                ("Throttles", 0.0, "Count"),
                ("Duration", duration, "Milliseconds"),
                ("ConcurrentExecutions", 1.0, "Count"),
            ):
                out.append({"MetricName": name, "Dimensions": dims, "Value": value, "Unit": unit, "Timestamp": at})
        return out

    def _lambda_alarm(self, result: BurstResult, view: AccountView) -> AlarmSpec | None:
        """Which of the function's standard alarms fires on this burst, if any."""
        reached = [o for o in result.invocations if o.reached]
        ran = [o for o in reached if o.status != "throttled"]
        errors = sum(o.status != "succeeded" for o in ran)
        throttles = len(reached) - len(ran)
        fn = self.function_name
        by_function = [{"value": fn, "name": "FunctionName"}]
        if result.invocations and not reached:
            # Lambda refused every caller: no invocation is recorded, and the heartbeat alarm on Invocations fires.
            return AlarmSpec(
                name=f"{fn}-no-invocations",
                description=f"{fn} Invocations heartbeat alarm",
                metric="Invocations",
                namespace="AWS/Lambda",
                value=0,
                dimensions=by_function,
                operator="LessThanThreshold",
                threshold=1.0,
                missing="breaching",
            )
        if errors:
            return AlarmSpec(
                name=f"{fn}-errors",
                description=f"{fn} Errors alarm",
                metric="Errors",
                namespace="AWS/Lambda",
                value=errors,
                dimensions=by_function,
                operator="GreaterThanOrEqualToThreshold",
                threshold=1.0,
                missing="notBreaching",
            )
        if throttles:
            return AlarmSpec(
                name=f"{fn}-throttles",
                description=f"{fn} Throttles alarm",
                metric="Throttles",
                namespace="AWS/Lambda",
                value=throttles,
                dimensions=by_function,
                operator="GreaterThanOrEqualToThreshold",
                threshold=1.0,
                missing="notBreaching",
            )
        if ran and not any(o.logged for o in ran):
            # Invocations happened but the log group received nothing: the heartbeat alarm on IncomingLogEvents.
            return AlarmSpec(
                name=f"{fn}-no-logs",
                description=f"{fn} IncomingLogEvents alarm",
                metric="IncomingLogEvents",
                namespace="AWS/Logs",
                value=0,
                dimensions=[{"value": view.log_group, "name": "LogGroupName"}],
                operator="LessThanThreshold",
                threshold=1.0,
                missing="breaching",
            )
        return None

    def _alarm(self, spec: AlarmSpec, start: datetime, view: AccountView) -> dict[str, Any]:
        """The CloudWatch alarm notification ``spec`` sends on its transition to ALARM."""
        stamp = start.strftime("%d/%m/%y %H:%M:%S")
        if spec.missing == "breaching":
            reason = (
                "Threshold Crossed: no datapoints were received for 1 period and 1 missing datapoint was "
                "treated as [Breaching]."
            )
        else:
            reason = (
                f"Threshold Crossed: 1 datapoint [{float(spec.value)} ({stamp})] was greater than or equal to the "
                f"threshold ({spec.threshold})."
            )
        region, account = view.region, view.account
        return {
            "AlarmName": spec.name,
            "AlarmDescription": spec.description,
            "AWSAccountId": account,
            "AlarmConfigurationUpdatedTimestamp": "2026-01-01T00:00:00.000+0000",
            "NewStateValue": "ALARM",
            "NewStateReason": reason,
            "StateChangeTime": _alarm_time(),
            "Region": REGION_NAMES.get(region, region),
            "AlarmArn": f"arn:aws:cloudwatch:{region}:{account}:alarm:{spec.name}",
            "OldStateValue": "OK",
            "OKActions": [],
            "AlarmActions": [self.alert_topic_arn or f"arn:aws:sns:{region}:{account}:{INCIDENT_TOPIC}"],
            "InsufficientDataActions": [],
            "Trigger": {
                "MetricName": spec.metric,
                "Namespace": spec.namespace,
                "StatisticType": "Statistic",
                "Statistic": spec.statistic,
                "Unit": None,
                "Dimensions": spec.dimensions,
                "Period": 60,
                "EvaluationPeriods": 1,
                "DatapointsToAlarm": 1,
                "ComparisonOperator": spec.operator,
                "Threshold": spec.threshold,
                "TreatMissingData": spec.missing,
                "EvaluateLowSampleCountPercentage": "",
            },
        }
