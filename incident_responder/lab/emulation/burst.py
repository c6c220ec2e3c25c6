"""EMULATING a workload: what every emulated Lambda function shares: a burst of invocations as Lambda runs it.

moto records configuration but enforces none of it (a revoked policy denies nothing, reserved
concurrency 0 throttles nothing, a disabled key encrypts nothing). So a workload reads the account
state the real function would run into and decides each invocation's fate from it; this module does
what Lambda itself does around that, once for every workload:

* throttling by reserved concurrency (a throttled request never reaches the function),
* the service refusing an invocation before the function runs (the key encrypting the environment
  disabled: ``KMSDisabledException``; a VpcConfig naming a deleted subnet or security group:
  ``InvalidSubnetIDException``, ``InvalidSecurityGroupIDException``; no log line at all), and the function's
  State as Lambda sets it on the way (Inactive when it cannot recreate its network interfaces, Pending: refused),
* the platform's lines (START, END, REPORT, ``Task timed out``, ``Runtime.ExitError`` when the
  function needs more memory than it has), in the runtime's own format (lab/runtimes.py),
* an asynchronously invoked function's failed events given up: sent to its dead-letter queue and on-failure
  destination, counted dropped (asynchronous.py),
* writing the lines to ``/aws/lambda/<name>`` (none when the role cannot write logs), one stream per
  execution environment, ``AWS/Lambda`` metrics, and the CloudWatch alarm notification the function's
  standard alarms would send to the incidents topic (traces.py).

A workload supplies only what it does: its facts (what its role may do, what its dependencies say),
its deliveries (one event per invocation, or batches a poller received) and its handler's steps.
Nothing written names the injected fault. Time inside a burst is simulated (a timeout costs no wall
clock), and an alarm is sent at the end of the burst instead of at the end of its period.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import Any, ClassVar

from incident_responder.account.iam_policy import is_allowed
from incident_responder.account.role import managed_policy_documents
from incident_responder.account.state import read_function_configuration
from incident_responder.core.aws import AwsClients
from incident_responder.lab.account.sources import INCIDENT_TOPIC, SHIPPED_SOURCES
from incident_responder.lab.concurrency import in_use_by_others, unreserved_limit
from incident_responder.lab.emulation.asynchronous import settle_failed_events
from incident_responder.lab.emulation.errors import Failure, Killed
from incident_responder.lab.emulation.invocation import (
    AccountView,
    AlarmSpec,
    BurstResult,
    Invocation,
    InvocationOutcome,
    WorkloadProfile,
)
from incident_responder.lab.emulation.refusals import NOT_INVOKED, service_error
from incident_responder.lab.emulation.traces import REGION_NAMES, LambdaTraces
from incident_responder.lab.init_errors import environment_error, permission_error
from incident_responder.lab.layers import bootstrap_error, extension_error, extension_start_seconds, layer_import_error
from incident_responder.lab.runtimes import (
    RaisedError,
    handler_error,
    module_error,
    read_handler_source,
    runtime_for,
    thrown_error,
)

# Lambda's limit on the Init phase of a function without provisioned concurrency or SnapStart.
INIT_PHASE_LIMIT_SECONDS = 10


class Workload(LambdaTraces):
    """Invokes a sample function as Lambda would, against the account behind ``clients``."""

    default_function_name: ClassVar[str] = ""
    default_profile: ClassVar[WorkloadProfile] = WorkloadProfile()
    invoked_alias: ClassVar[str | None] = None  # callers invoke this alias when the function has it
    # The AWS service that invokes the function under its resource-based policy (None: a caller with IAM rights of
    # its own, or a poller using the execution role), and what it logs when Lambda refuses it.
    invoked_by: ClassVar[str | None] = None
    refused_caller_message: ClassVar[str] = ""

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

    def async_event(self, view: AccountView, facts: dict[str, Any]) -> dict[str, Any] | None:
        """The event a service invokes the function with asynchronously (None: its callers wait for the answer):
        Lambda retries it when it fails, then sends it to the dead-letter queue and on-failure destination."""
        return None

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
        not_before: datetime | None = None,
    ) -> BurstResult:
        """One concurrent burst of ``invocations``, then an alarm notification if it went badly (``notify``
        False: the alarm is evaluated and returned but not sent, as a verification's own traffic must not
        start another incident; ``not_before``: the burst starts then at the earliest, as traffic a while ahead)."""
        view = self.read_view()
        facts = self.facts(view)
        facts["thrown"] = thrown_error(view.code, view.runtime)
        # What fails the Init phase, first to fail first: extensions start, then the runtime's bootstrap starts, imports
        # the handler's module, then finds the handler in it.
        facts["init_failure"] = (
            extension_error(self.clients, view.code)
            or bootstrap_error(self.clients, view.code)
            or layer_import_error(self.clients, view.code, view.runtime)
            or permission_error(view.code, view.runtime)
            or module_error(view.code, view.runtime)
            or environment_error(view.code, view.environment, view.runtime)
            or handler_error(view.code, view.runtime)
        )
        # The Init phase's time: the slowest extension's start, then the runtime's and the function's static code.
        facts["init_seconds"] = extension_start_seconds(self.clients, view.code) + self.profile.init_seconds
        start = self._burst_start(view.log_group)
        if not_before is not None:
            start = max(start, not_before)
        events = self.deliveries(invocations, view, facts)
        config = view.config
        if config.reserved_concurrency is None:
            # Functions without a reservation share the account's unreserved concurrency with every other one.
            free = max(0, unreserved_limit(self.clients) - int(in_use_by_others(self.clients, self.function_name)))
            runnable = min(len(events), free)
        else:
            runnable = min(len(events), config.reserved_concurrency)
        refused = self._service_error(view)
        caller_denied = not self._caller_allowed(view)
        # The caller names the alias: once it is gone, Lambda answers that it does not exist (the Invoke API's words).
        missing = self.invoked_by is not None and self.invoked_alias not in {a.name for a in view.config.aliases}
        outcomes: list[InvocationOutcome] = []
        for index, event in enumerate(events):
            request_id = str(uuid.uuid4())
            if missing:
                outcome = InvocationOutcome(
                    request_id=request_id,
                    status="failed",
                    error_type="ResourceNotFoundException",
                    error_message="The resource specified in the request does not exist.",
                    logged=False,
                    reached=False,
                )
            elif caller_denied:
                # Lambda refuses the caller before invoking anything: the caller logs it, the function shows nothing.
                outcome = InvocationOutcome(
                    request_id=request_id,
                    status="failed",
                    error_message=self.refused_caller_message,
                    logged=False,
                    reached=False,
                )
            elif index >= runnable:
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
                    reached=refused[0] not in NOT_INVOKED,  # a Pending function (an Inactive version) is not invoked
                    executed_version=view.code.version,
                )
            else:
                outcome, lines = self._run_one(request_id, start, view, facts, event, log_lines or [], app_error)
                if view.can_log:
                    self._write_logs(view, start, lines)
                outcome = outcome.model_copy(update={"logged": view.can_log})
            self.settle(view, facts, event, outcome)
            outcomes.append(outcome)
        if reached := [o for o in outcomes if o.reached]:
            self._put_metrics(reached, start)
        if outcomes:
            async_event = self.async_event(view, facts)
            if async_event is not None:
                settle_failed_events(self.clients, view, outcomes, start, async_event)
        extra = self.after_burst(view, facts, outcomes, start)
        result = BurstResult(
            function_name=self.function_name, invocations=outcomes, started_at=start, configuration=view.config, **extra
        )
        spec = self._lambda_alarm(result, view) or self.extra_alarm(view, facts, result, start)
        if spec is None:
            return result
        alert = self._alarm(spec, start, view)
        if not notify:
            return result.model_copy(update={"alert": alert})
        topic_arn = self.alert_topic_arn or f"arn:aws:sns:{view.region}:{view.account}:{INCIDENT_TOPIC}"
        message_id = self.clients.get("sns").publish(
            TopicArn=topic_arn,
            Subject=f'ALARM: "{alert["AlarmName"]}" in {REGION_NAMES.get(view.region, view.region)}'[:99],
            Message=json.dumps(alert),
        )["MessageId"]
        return result.model_copy(update={"alert": alert, "alert_message_id": message_id})

    def _caller_allowed(self, view: AccountView) -> bool:
        """Whether the function's resource-based policy lets its caller invoke what it invokes (the alias, else the
        function): a statement for the caller's service on that qualifier whose source ARN matches the caller."""
        if self.invoked_by is None:
            return True
        qualifier = self.invoked_alias if self.invoked_alias in {a.name for a in view.config.aliases} else None
        source = self.caller_arn(view)
        for permission in view.config.invoke_permissions:
            if permission.qualifier != qualifier or permission.principal not in (self.invoked_by, "*"):
                continue
            if permission.action not in ("lambda:InvokeFunction", "lambda:*"):
                continue
            if permission.source_arn and not fnmatchcase(source, permission.source_arn):
                continue
            if permission.source_account and permission.source_account != view.account:
                continue
            return True
        return False

    def caller_arn(self, view: AccountView) -> str:
        """The ARN the caller invokes as (its source ARN in the resource-based policy's condition)."""
        return ""

    def invoked_qualifier(self, view: AccountView) -> str | None:
        """The alias or version the function's caller invokes (None: $LATEST)."""
        return self.invoked_alias if self.invoked_alias in {a.name for a in view.config.aliases} else None

    def _service_error(self, view: AccountView) -> tuple[str, str] | None:
        return service_error(self.clients, view, self.function_name, self.invoked_qualifier(view))

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
        init_error: RaisedError | None = facts.get("init_failure")
        init_seconds = float(facts.get("init_seconds", self.profile.init_seconds))
        init_ms: float | None = init_seconds * 1000
        # Each environment fails its Init phase: the platform reports it before START, with the error types it
        # names itself (Runtime.*, Extension.*).
        if init_error is not None and init_error.error_type.startswith(("Runtime.", "Extension.")):
            ctx.lines.append((0.0, runtime.init_report(init_seconds * 1000, "error", init_error.error_type)))
        # An Init phase longer than its 10 seconds times out; Lambda runs it again in the invocation, within the
        # function's timeout (a suppressed init: no INIT_REPORT of its own, and the REPORT's duration includes it).
        suppressed = init_error is None and init_seconds > INIT_PHASE_LIMIT_SECONDS
        if suppressed:
            ctx.lines.append((0.0, runtime.init_report(INIT_PHASE_LIMIT_SECONDS * 1000, "timeout")))
            init_ms = None
        ctx.lines.append((0.0, runtime.start(request_id, view.code.version)))
        error: RaisedError | None = None
        killed = False
        try:
            if init_error is not None:  # the Init phase failed: no code of the handler runs
                ctx.spend(0.05)
                ctx.fail(init_error)
            if suppressed:
                ctx.spend(init_seconds)
            if ctx.t <= config.timeout:  # else the suppressed init used the function's time: no handler code ran
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
            if error.error_type in ("Runtime.ExitError", "Runtime.InvalidEntrypoint"):  # the platform says so
                ctx.lines.append((t, runtime.exited(request_id, error.message, error.error_type)))
            elif not error.platform_only:
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
                    init_ms,
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
