"""EMULATING a workload: what one invocation needs, runs into and comes to: its profile, the account as it sees it,
its simulated clock, memory and log lines, and its outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, NoReturn

from pydantic import BaseModel, Field

from incident_responder.account.iam_policy import is_allowed
from incident_responder.account.state import FunctionConfiguration
from incident_responder.lab.emulation.errors import Failure, Killed
from incident_responder.lab.runtimes import DeployedCode, RaisedError, Runtime


@dataclass(frozen=True)
class WorkloadProfile:
    """What one invocation of a sample function needs; the function's own nature, not its config."""

    work_seconds_at_512mb: float = 2.4  # CPU scales with memory, as in Lambda
    peak_memory_mb: int = 300
    connect_timeout_seconds: float = 5.0
    connect_attempts: int = 2
    init_seconds: float = 0.35
    base_memory_mb: int = 88  # used before the work peaks
    tmp_write_mb: int = 0  # what it stages on /tmp at peak


class InvocationOutcome(BaseModel):
    request_id: str
    status: Literal["succeeded", "failed", "timed_out", "throttled"]
    error_type: str | None = None
    error_message: str | None = None
    duration_ms: float = 0.0
    logged: bool = Field(description="whether the invocation's log lines reached CloudWatch Logs")
    executed_version: str | None = Field(default=None, description="the version that ran ($LATEST or a number)")
    reached: bool = Field(
        default=True,
        description="False: Lambda refused the caller before invoking the function (its resource-based policy does "
        "not allow it): no metric of the function counts the request",
    )


class BurstResult(BaseModel):
    function_name: str
    invocations: list[InvocationOutcome]
    alert: dict[str, Any] | None = None
    alert_message_id: str | None = None
    started_at: datetime | None = Field(default=None, description="when the burst's invocations started")
    messages_left: int | None = Field(
        default=None, description="a queue-fed function: messages its burst left unprocessed (None: not queue-fed)"
    )
    configuration: FunctionConfiguration | None = Field(
        default=None, exclude=True, description="the function's configuration as the burst read it, before it ran"
    )

    @property
    def healthy(self) -> bool:
        return (
            bool(self.invocations)
            and all(i.status == "succeeded" and i.logged for i in self.invocations)
            and not self.messages_left
        )


@dataclass
class AccountView:
    """What the function runs into, read once per burst."""

    config: FunctionConfiguration
    raw: dict[str, Any]  # GetFunctionConfiguration of $LATEST
    account: str
    region: str
    policies: list[dict[str, Any]]
    log_group: str
    can_log: bool
    runtime: Runtime
    code: DeployedCode

    @property
    def environment(self) -> dict[str, str]:
        return self.raw.get("Environment", {}).get("Variables", {})

    @property
    def role_arn(self) -> str:
        return self.config.role.role_arn

    def allowed(self, action: str, resource: str) -> bool:
        return is_allowed(self.policies, action, resource)


@dataclass
class Invocation:
    """One invocation's simulated clock, memory and log lines, as the handler's steps advance them."""

    runtime: Runtime
    request_id: str
    start: datetime
    memory_size: int
    profile: WorkloadProfile
    t: float = 0.0
    memory_used: int = 0
    lines: list[tuple[float, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.memory_used = self.profile.base_memory_mb

    def at(self, seconds: float) -> datetime:
        return self.start + timedelta(seconds=seconds)

    def info(self, text: str, at: float | None = None) -> None:
        when = self.t if at is None else at
        self.lines.append((when, self.runtime.info(self.at(when), self.request_id, text)))

    def log_raw(self, lines: list[str]) -> None:
        for raw in lines:
            self.lines.append((self.t, raw))

    def spend(self, seconds: float) -> None:
        self.t += seconds

    def compute(self, seconds_at_512mb: float) -> None:
        # Lambda gives CPU in proportion to memory, up to one full vCPU at 1769 MB.
        self.t += seconds_at_512mb * 512 / min(self.memory_size, 1769)

    def peak(self, memory_mb: int, seconds_to_peak: float = 1.2) -> None:
        if self.memory_size < memory_mb:
            self.t += seconds_to_peak
            self.memory_used = self.memory_size
            raise Killed
        self.memory_used = memory_mb + 1

    def fail(self, error: RaisedError) -> NoReturn:
        raise Failure(error)


@dataclass(frozen=True)
class AlarmSpec:
    name: str
    description: str
    metric: str
    namespace: str
    value: float
    dimensions: list[dict[str, str]]
    operator: str
    threshold: float
    missing: str
    statistic: str = "SUM"
