"""VERIFYING: how the function behaved since the apply finished, from a health probe.

The deployed probe (:func:`cloudwatch_probe`) reads the function's ``AWS/Lambda`` metrics of the whole minutes
after the change that Lambda has finished reporting, and says when the first will be while there is none
(``pending_until``); a probe that sees each invocation (:func:`burst_probe`) can tell the function's own exception
from an infrastructure fault (:func:`symptom_of`). :func:`set_health_probe` replaces the probe verifying uses (the
lab sets one; ``incident_responder.lab.pipeline.incident.metric_verification_probe`` runs this one on its metrics).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from incident_responder.account.log_records import aws_error_category, service_error_code
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import FaultType


class InvocationSample(BaseModel):
    """One invocation as a probe that sees invocations saw it (the lab's ``InvocationOutcome`` fits)."""

    model_config = ConfigDict(extra="ignore", from_attributes=True)

    status: Literal["succeeded", "failed", "timed_out", "throttled"]
    error_type: str | None = None
    error_message: str | None = None
    logged: bool = True


class PeriodFigures(BaseModel):
    """One whole minute of the function's ``AWS/Lambda`` sums."""

    start: datetime
    invocations: int = 0
    errors: int = 0
    throttles: int = 0


class HealthReport(BaseModel):
    """How the function behaved since the apply finished."""

    source: str = Field(description="cloudwatch_metrics, or what invoked the function")
    invocations: int = 0
    errors: int = 0
    throttles: int = 0
    samples: list[InvocationSample] | None = Field(
        default=None, description="each invocation, when the probe saw them (metrics alone do not)"
    )
    periods: list[PeriodFigures] | None = Field(
        default=None, description="metrics: every whole minute judged, the first whole minute after the change first"
    )
    pending_until: datetime | None = Field(
        default=None,
        description="set when the health is not yet known: when the first whole minute after the change will have "
        "been reported",
    )

    @property
    def no_traffic(self) -> bool:
        return self.invocations == 0 and self.throttles == 0

    def settling_errors(self, bound: int) -> int:
        """Errors of the first whole minute after the change that may be the change still taking effect: at most
        ``bound``, and only when invocations in that minute succeeded as well (else the change did not help)."""
        first = self.periods[0] if self.periods else None
        if first is None or not 0 < first.errors <= bound or first.invocations <= first.errors:
            return 0
        return first.errors

    def figures(self) -> str:
        return f"{self.invocations} invocations, {self.errors} errors, {self.throttles} throttles"


HealthProbe = Callable[[AwsClients, str, datetime], HealthReport]
"""``probe(clients, function_name, since)``: the function's health since ``since``."""

PERIOD = timedelta(minutes=1)
# "Lambda sends metric data to CloudWatch in 1-minute intervals" (docs.aws.amazon.com/lambda/latest/dg/
# monitoring-metrics.html): a minute's datapoint may arrive up to one such interval after its last invocation ended.
DELIVERY_DELAY = timedelta(minutes=1)


def first_whole_minute(since: datetime) -> datetime:
    """The first whole minute after ``since``: the minute ``since`` falls in also counts traffic from before it."""
    floor = since.replace(second=0, microsecond=0)
    return floor if floor == since else floor + PERIOD


def reporting_lag(clients: AwsClients, function_name: str) -> timedelta:
    """How long after a minute ends its AWS/Lambda datapoints may still change. "The timestamp on a metric reflects
    when the function was invoked ... if your function has a 10-minute timeout, then look more than 10 minutes in the
    past for accurate metrics" (docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-view.html): the function's
    timeout, then the delivery interval."""
    timeout = clients.get("lambda").get_function_configuration(FunctionName=function_name).get("Timeout", 3)
    return timedelta(seconds=int(timeout)) + DELIVERY_DELAY


def cloudwatch_probe(
    clients: AwsClients, function_name: str, since: datetime, *, now: datetime | None = None
) -> HealthReport:
    """The deployed probe: ``AWS/Lambda`` Invocations, Errors and Throttles of each whole minute after ``since``
    that Lambda has finished reporting (``now``: the moment CloudWatch is read as of, default the clock).

    A minute still within :func:`reporting_lag` may hold a part of its invocations (a first failure without the
    successes after it, or nothing yet), so it is not judged; until the first whole minute is complete the report
    says when it will be (``pending_until``): not yet known, neither healthy nor unhealthy. A complete minute
    without datapoints had no traffic (Lambda publishes these metrics only when it has something to count).
    """
    now = now or datetime.now(UTC)
    start = first_whole_minute(since)
    lag = reporting_lag(clients, function_name)
    end = (now - lag).replace(second=0, microsecond=0)  # minutes ending by now - lag are complete
    if end <= start:
        return HealthReport(source="cloudwatch_metrics", pending_until=start + PERIOD + lag)
    minutes = {start + PERIOD * i: PeriodFigures(start=start + PERIOD * i) for i in range((end - start) // PERIOD)}
    names = {"invocations": "Invocations", "errors": "Errors", "throttles": "Throttles"}
    dims = [{"Name": "FunctionName", "Value": function_name}]
    queries = [
        {
            "Id": key,
            "MetricStat": {
                "Metric": {"Namespace": "AWS/Lambda", "MetricName": name, "Dimensions": dims},
                "Period": int(PERIOD.total_seconds()),
                "Stat": "Sum",
            },
            "ReturnData": True,
        }
        for key, name in names.items()
    ]
    kwargs: dict[str, Any] = {"MetricDataQueries": queries, "StartTime": start, "EndTime": end}
    while True:
        page = clients.get("cloudwatch").get_metric_data(**kwargs)
        for result in page["MetricDataResults"]:
            for at, value in zip(result.get("Timestamps", []), result.get("Values", []), strict=False):
                period = minutes.get(at.astimezone(UTC).replace(second=0, microsecond=0))
                if period is not None:
                    setattr(period, result["Id"], getattr(period, result["Id"]) + int(value))
        if not page.get("NextToken"):
            break
        kwargs["NextToken"] = page["NextToken"]
    periods = sorted(minutes.values(), key=lambda p: p.start)
    return HealthReport(
        source="cloudwatch_metrics",
        invocations=sum(p.invocations for p in periods),
        errors=sum(p.errors for p in periods),
        throttles=sum(p.throttles for p in periods),
        periods=periods,
    )


def waiting_within(remaining_ms: int, keep_ms: int = 10_000) -> Callable[[datetime], bool]:
    """A wait for a moment within a Lambda invocation's remaining time (less ``keep_ms`` for the work after it):
    ``wait(until)`` sleeps until ``until`` and says True, or says False at once when it would not fit."""
    deadline = time.monotonic() + (remaining_ms - keep_ms) / 1000

    def wait(until: datetime) -> bool:
        seconds = (until - datetime.now(UTC)).total_seconds()
        if time.monotonic() + seconds > deadline:
            return False
        time.sleep(max(0.0, seconds))
        return True

    return wait


def burst_probe(invoke: Callable[[AwsClients, str], Iterable[Any]], source: str = "invocation_burst") -> HealthProbe:
    """A probe that invokes the function now: ``invoke(clients, function_name)`` returns its invocations
    (objects or dicts with ``status``, ``error_type``, ``error_message``, ``logged``)."""

    def probe(clients: AwsClients, function_name: str, since: datetime) -> HealthReport:
        samples = [InvocationSample.model_validate(i) for i in invoke(clients, function_name)]
        ran = [s for s in samples if s.status != "throttled"]
        return HealthReport(
            source=source,
            invocations=len(ran),
            errors=sum(s.status != "succeeded" for s in ran),
            throttles=len(samples) - len(ran),
            samples=samples,
        )

    return probe


_probe: HealthProbe = cloudwatch_probe


def set_health_probe(probe: HealthProbe | None) -> None:
    """Replace the health probe :func:`~incident_responder.remediation.verify.verify` uses by default (``None``:
    back to CloudWatch metrics)."""
    global _probe
    _probe = probe or cloudwatch_probe


def health_probe() -> HealthProbe:
    return _probe


# What each kind of AWS error shows (one table: incident_responder.account.log_records); "throttled" here is a downstream
# service refusing the function's calls, the function's own throttles are TooManyRequestsException from Lambda.
# What a write to a full /tmp and a read of a secret scheduled for deletion (or deleted) report.
NO_SPACE_LEFT = "No space left on device"
SECRET_GONE = (
    "because it was marked for deletion",  # GetSecretValue of a secret scheduled for deletion
    "Secrets Manager can't find the specified secret",
)
_FAULT_FOR_CATEGORY = {
    "kms": FaultType.KMS_KEY_DISABLED,
    "network": FaultType.NETWORK_BLOCK,
    "throttled": FaultType.DEPENDENCY_THROTTLING,
    "access_denied": FaultType.PERMISSION_LOSS,
}


def symptom_of(sample: InvocationSample) -> FaultType | None:
    """The infrastructure fault an invocation's failure shows, or None: the function's own exception."""
    etype, message = sample.error_type or "", sample.error_message or ""
    if sample.status == "throttled" or etype == "TooManyRequestsException":
        return FaultType.THROTTLING
    if sample.status == "timed_out" or etype == "Sandbox.Timedout" or "Task timed out" in message:
        return FaultType.TIMEOUT
    if etype in ("Runtime.ExitError", "Runtime.OutOfMemory") or "signal: killed" in message:
        return FaultType.MEMORY_EXHAUSTION
    if NO_SPACE_LEFT in message:  # ENOSPC: /tmp (ephemeral storage) is full
        return FaultType.STORAGE_EXHAUSTION
    if any(m in message for m in SECRET_GONE):
        return FaultType.DEPENDENCY_MISSING
    category = aws_error_category(service_error_code(etype, message))
    if category in _FAULT_FOR_CATEGORY:
        return _FAULT_FOR_CATEGORY[category]
    if "AccessDenied" in message or "not authorized" in message:
        return FaultType.PERMISSION_LOSS
    if sample.status == "succeeded":
        # Ran, but its log lines never arrived: the role cannot write its logs.
        return None if sample.logged else FaultType.PERMISSION_LOSS
    return None
