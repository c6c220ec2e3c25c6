"""What every emulated Lambda function shares: a burst of invocations, and the traces the service leaves.

moto records configuration but enforces none of it (a revoked policy denies nothing, reserved
concurrency 0 throttles nothing, a disabled key encrypts nothing). So a workload reads the account
state the real function would run into and decides each invocation's fate from it; this module does
what Lambda itself does around that, once for every workload:

* throttling by reserved concurrency (a throttled request never reaches the function),
* the service refusing an invocation before the function runs (the key encrypting the environment
  disabled: ``KMSDisabledException``, no log line at all),
* the platform's lines (START, END, REPORT, ``Task timed out``, ``Runtime.ExitError`` when the
  function needs more memory than it has), in the runtime's own format (runtimes.py),
* writing the lines to ``/aws/lambda/<name>`` (none when the role cannot write logs), one stream per
  execution environment, ``AWS/Lambda`` metrics, and the CloudWatch alarm notification the function's
  standard alarms would send to the incidents topic.

A workload supplies only what it does: its facts (what its role may do, what its dependencies say),
its deliveries (one event per invocation, or batches a poller received) and its handler's steps.
Nothing written names the injected fault. Time inside a burst is simulated (a timeout costs no wall
clock), and an alarm is sent at the end of the burst instead of at the end of its period.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Literal, NoReturn

from pydantic import BaseModel, Field

from incident_responder.account.iam_policy import is_allowed
from incident_responder.account.state import (
    FunctionConfiguration,
    managed_policy_documents,
    read_function_configuration,
)
from incident_responder.core.aws import AwsClients
from incident_responder.lab.account import INCIDENT_TOPIC, SHIPPED_SOURCES
from incident_responder.lab.concurrency import in_use_by_others, unreserved_limit
from incident_responder.lab.runtimes import (
    DeployedCode,
    RaisedError,
    Runtime,
    read_handler_source,
    runtime_for,
    thrown_error,
)

REGION_NAMES = {
    "us-east-1": "US East (N. Virginia)",
    "us-east-2": "US East (Ohio)",
    "us-west-2": "US West (Oregon)",
    "eu-west-1": "Europe (Ireland)",
    "eu-central-1": "Europe (Frankfurt)",
}
# What the Lambda service answers when it cannot decrypt the function's environment (the function never runs).
KMS_ERRORS = {
    "Disabled": (
        "KMSDisabledException",
        "Lambda was unable to decrypt the environment variables because the KMS key used is disabled. "
        "Please check the function's KMS key settings.",
    ),
    "denied": (
        "KMSAccessDeniedException",
        "Lambda was unable to decrypt the environment variables because KMS access was denied. Please check the "
        "function's KMS key settings. KMS Exception: AccessDeniedExceptionKMS Message: User: {principal} is not "
        "authorized to perform: kms:Decrypt on resource: {key} because no resource-based policy allows the "
        "kms:Decrypt action",
    ),
    "other": (
        "KMSInvalidStateException",
        "Lambda was unable to decrypt the environment variables because the KMS key used is in an invalid state "
        "for Decrypt. Please check the function's KMS key settings.",
    ),
}


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


class BurstResult(BaseModel):
    function_name: str
    invocations: list[InvocationOutcome]
    alert: dict[str, Any] | None = None
    alert_message_id: str | None = None
    messages_left: int | None = Field(
        default=None, description="a queue-fed function: messages its burst left unprocessed (None: not queue-fed)"
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


class Failure(Exception):
    def __init__(self, error: RaisedError):
        super().__init__(error.error_type)
        self.error = error


class Killed(Exception):
    """The function used more memory than it has: the sandbox is killed."""


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


def _alarm_time() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}+0000"


class Workload:
    """Invokes a sample function as Lambda would, against the account behind ``clients``."""

    default_function_name: ClassVar[str] = ""
    default_profile: ClassVar[WorkloadProfile] = WorkloadProfile()
    invoked_alias: ClassVar[str | None] = None  # callers invoke this alias when the function has it

    def __init__(
        self,
        clients: AwsClients,
        function_name: str | None = None,
        profile: WorkloadProfile | None = None,
        alert_topic_arn: str | None = None,
    ):
        self.clients = clients
        self.function_name = function_name or self.default_function_name
        self.profile = profile or self.default_profile
        # Where the function's alarms notify (AlarmActions); by default the lab's "incident-alerts" topic.
        self.alert_topic_arn = alert_topic_arn or os.environ.get("INCIDENT_TOPIC_ARN")

    # -- what a workload supplies ------------------------------------------------------------------
    def facts(self, view: AccountView) -> dict[str, Any]:
        """What the function's steps will run into (permissions, dependencies), read once per burst."""
        return {}

    def deliveries(self, invocations: int, view: AccountView, facts: dict[str, Any]) -> list[Any]:
        """One event per invocation (synchronous callers); a poller returns the batches it received."""
        return [None] * invocations

    def handle(
        self,
        ctx: Invocation,
        view: AccountView,
        facts: dict[str, Any],
        event: Any,
        extra: list[str],
        app_error: str | None,
    ) -> None:
        """The handler's steps: log with ``ctx.info``, spend time, ``ctx.fail`` with what the code raises."""
        raise NotImplementedError

    def settle(self, view: AccountView, facts: dict[str, Any], event: Any, outcome: InvocationOutcome) -> None:
        """After each invocation (a poller deletes what succeeded)."""

    def after_burst(
        self, view: AccountView, facts: dict[str, Any], outcomes: list[InvocationOutcome], start: datetime
    ) -> dict[str, Any]:
        """Traces of the burst beyond Lambda's own (a dependency's metrics); updates for the BurstResult."""
        return {}

    def extra_alarm(
        self, view: AccountView, facts: dict[str, Any], result: BurstResult, start: datetime
    ) -> AlarmSpec | None:
        """An alarm of the function's event source, when none of Lambda's own fired."""
        return None

    # -- the burst ---------------------------------------------------------------------------------
    def read_view(self) -> AccountView:
        config = read_function_configuration(self.clients, self.function_name)
        raw = self.clients.get("lambda").get_function_configuration(FunctionName=self.function_name)
        account = raw["FunctionArn"].split(":")[4]
        region = self.clients.region
        policies = list(config.role.inline_policies.values())
        policies += managed_policy_documents(self.clients, config.role.attached_policy_arns).values()
        log_group = f"/aws/lambda/{self.function_name}"
        log_arn = f"arn:aws:logs:{region}:{account}:log-group:{log_group}:log-stream:"
        can_log = is_allowed(policies, "logs:CreateLogStream", log_arn) and is_allowed(
            policies, "logs:PutLogEvents", log_arn
        )
        alias = self.invoked_alias if self.invoked_alias in {a.name for a in config.aliases} else None
        code = read_handler_source(self.clients, self.function_name, alias, SHIPPED_SOURCES)
        return AccountView(
            config, raw, account, region, policies, log_group, can_log, runtime_for(raw.get("Runtime")), code
        )

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
        view = self.read_view()
        facts = self.facts(view)
        facts["thrown"] = thrown_error(view.code, view.runtime)
        start = self._burst_start(view.log_group)
        events = self.deliveries(invocations, view, facts)
        config = view.config
        if config.reserved_concurrency is None:
            # Functions without a reservation share the account's unreserved concurrency with every other one.
            free = max(0, unreserved_limit(self.clients) - int(in_use_by_others(self.clients, self.function_name)))
            runnable = min(len(events), free)
        else:
            runnable = min(len(events), config.reserved_concurrency)
        refused = self._service_error(view)
        outcomes: list[InvocationOutcome] = []
        for index, event in enumerate(events):
            request_id = str(uuid.uuid4())
            if index >= runnable:
                outcome = InvocationOutcome(
                    request_id=request_id,
                    status="throttled",
                    error_type="TooManyRequestsException",
                    error_message="Rate Exceeded.",
                    logged=False,
                )
            elif refused is not None:
                # The service fails the request before any code runs: nothing reaches the log group.
                outcome = InvocationOutcome(
                    request_id=request_id,
                    status="failed",
                    error_type=refused[0],
                    error_message=refused[1],
                    logged=False,
                    executed_version=view.code.version,
                )
            else:
                outcome, lines = self._run_one(request_id, start, view, facts, event, log_lines or [], app_error)
                if view.can_log:
                    self._write_logs(view, start, lines)
                outcome = outcome.model_copy(update={"logged": view.can_log})
            self.settle(view, facts, event, outcome)
            outcomes.append(outcome)
        if outcomes:
            self._put_metrics(outcomes, start)
        extra = self.after_burst(view, facts, outcomes, start)
        result = BurstResult(function_name=self.function_name, invocations=outcomes, **extra)
        spec = self._lambda_alarm(result, view) or self.extra_alarm(view, facts, result, start)
        if spec is None:
            return result
        alert = self._alarm(spec, start, view)
        if not notify:
            return result.model_copy(update={"alert": alert})
        topic_arn = self.alert_topic_arn or f"arn:aws:sns:{view.region}:{view.account}:{INCIDENT_TOPIC}"
        message_id = self.clients.get("sns").publish(
            TopicArn=topic_arn,
            Subject=f'ALARM: "{alert["AlarmName"]}" in {REGION_NAMES.get(view.region, view.region)}'[:100],
            Message=json.dumps(alert),
        )["MessageId"]
        return result.model_copy(update={"alert": alert, "alert_message_id": message_id})

    def _service_error(self, view: AccountView) -> tuple[str, str] | None:
        for key in view.config.kms_keys:
            if key.key_state not in (None, "Enabled"):
                return KMS_ERRORS.get(key.key_state, KMS_ERRORS["other"])
            if key.role_may_decrypt is False:
                error_type, message = KMS_ERRORS["denied"]
                role = view.role_arn.rsplit("/", 1)[-1]
                principal = f"arn:aws:sts::{view.account}:assumed-role/{role}/{self.function_name}"
                return error_type, message.format(principal=principal, key=key.key_arn)
        return None

    def _run_one(
        self,
        request_id: str,
        start: datetime,
        view: AccountView,
        facts: dict[str, Any],
        event: Any,
        extra: list[str],
        app_error: str | None,
    ) -> tuple[InvocationOutcome, list[tuple[float, str]]]:
        config, runtime = view.config, view.runtime
        ctx = Invocation(runtime, request_id, start, config.memory_size, self.profile)
        ctx.lines.append((0.0, runtime.start(request_id, view.code.version)))
        error: RaisedError | None = None
        killed = False
        try:
            self.handle(ctx, view, facts, event, extra, app_error)
        except Failure as failure:
            error = failure.error
        except Killed:
            killed = True
        t = ctx.t
        timed_out = t > config.timeout
        if timed_out:
            t = float(config.timeout)
            ctx.lines = [line for line in ctx.lines if line[0] <= t]  # nothing after the sandbox was stopped
            ctx.lines.append((t, runtime.timed_out(ctx.at(t), request_id, t)))
            status, etype, emsg = "timed_out", "Sandbox.Timedout", f"Task timed out after {t:.2f} seconds"
        elif killed:
            ctx.lines.append((t, runtime.killed(request_id)))
            status, etype, emsg = "failed", "Runtime.ExitError", "Runtime exited with error: signal: killed"
        elif error is not None:
            ctx.lines.append((t, runtime.error(ctx.at(t), request_id, error)))
            status, etype, emsg = "failed", error.error_type, error.message
        else:
            status, etype, emsg = "succeeded", None, None
        duration_ms = t * 1000
        ctx.lines.append((t, runtime.end(request_id)))
        ctx.lines.append(
            (
                t,
                runtime.report(
                    request_id,
                    duration_ms,
                    config.memory_size,
                    ctx.memory_used,
                    self.profile.init_seconds * 1000,
                    timed_out,
                ),
            )
        )
        outcome = InvocationOutcome(
            request_id=request_id,
            status=status,
            error_type=etype,
            error_message=emsg,
            duration_ms=round(duration_ms, 2),
            logged=False,
            executed_version=view.code.version,
        )
        return outcome, ctx.lines

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

    # -- traces ----------------------------------------------------------------------------------
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
        ran = [o for o in result.invocations if o.status != "throttled"]
        errors = sum(o.status != "succeeded" for o in ran)
        throttles = len(result.invocations) - len(ran)
        fn = self.function_name
        by_function = [{"value": fn, "name": "FunctionName"}]
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
