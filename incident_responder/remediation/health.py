"""VERIFYING: how the function behaved since the apply finished, from a health probe.

The deployed probe (:func:`cloudwatch_probe`) reads the function's ``AWS/Lambda`` metrics; a probe that sees
each invocation (:func:`burst_probe`) can tell the function's own exception from an infrastructure fault
(:func:`symptom_of`). :func:`set_health_probe` replaces the probe verifying uses (the lab sets one).
"""

from __future__ import annotations

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


class HealthReport(BaseModel):
    """How the function behaved since the apply finished."""

    source: str = Field(description="cloudwatch_metrics, or what invoked the function")
    invocations: int = 0
    errors: int = 0
    throttles: int = 0
    samples: list[InvocationSample] | None = Field(
        default=None, description="each invocation, when the probe saw them (metrics alone do not)"
    )

    @property
    def no_traffic(self) -> bool:
        return self.invocations == 0 and self.throttles == 0

    def figures(self) -> str:
        return f"{self.invocations} invocations, {self.errors} errors, {self.throttles} throttles"


HealthProbe = Callable[[AwsClients, str, datetime], HealthReport]
"""``probe(clients, function_name, since)``: the function's health since ``since``."""


def _minute_after(moment: datetime) -> datetime:
    floor = moment.replace(second=0, microsecond=0)
    return floor if floor == moment else floor + timedelta(minutes=1)


def cloudwatch_probe(clients: AwsClients, function_name: str, since: datetime) -> HealthReport:
    """The deployed probe: sums of ``AWS/Lambda`` Invocations, Errors and Throttles since ``since``.

    Starts at the first whole minute after ``since``: a minute's sum would count failures from before
    the fix. Metrics arrive a minute or so late, which the state machine's settle wait allows for.
    """
    start = _minute_after(since)
    end = datetime.now(UTC)
    sums = {"Invocations": 0.0, "Errors": 0.0, "Throttles": 0.0}
    if end > start:
        dims = [{"Name": "FunctionName", "Value": function_name}]
        queries = [
            {
                "Id": name.lower(),
                "MetricStat": {
                    "Metric": {"Namespace": "AWS/Lambda", "MetricName": name, "Dimensions": dims},
                    "Period": 60,
                    "Stat": "Sum",
                },
                "ReturnData": True,
            }
            for name in sums
        ]
        by_id = {name.lower(): name for name in sums}
        kwargs: dict[str, Any] = {"MetricDataQueries": queries, "StartTime": start, "EndTime": end}
        while True:
            page = clients.get("cloudwatch").get_metric_data(**kwargs)
            for result in page["MetricDataResults"]:
                sums[by_id[result["Id"]]] += sum(result.get("Values", []))
            if not page.get("NextToken"):
                break
            kwargs["NextToken"] = page["NextToken"]
    return HealthReport(
        source="cloudwatch_metrics",
        invocations=int(sums["Invocations"]),
        errors=int(sums["Errors"]),
        throttles=int(sums["Throttles"]),
    )


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
