"""The whole pipeline on the embedded lab: the deployed stack, the sample workload, and scenario runs.

    with LabPipeline.start() as pipeline:
        record = pipeline.run(load_scenario("scenarios/s3-policy-revoked.yaml"))

``start`` runs moto, deploys ``template.yaml`` (stack.py), puts each of the template's function URLs
in front of its function's own handler (function_url.py: SigV4 checked as AWS_IAM requires, each in
its own process with the function's environment), creates and onboards the sample workloads
(``data-processor``, ``orders-api``, ``queue-consumer``). ``run``
applies a scenario's faults with chaos, lets the workload fail and raise its alarm on the stack's SNS
topic; from there everything is the deployed path: SNS -> ingest -> Step Functions -> investigate ->
signed MCP requests -> the function URL -> ``handlers/diagnostics_mcp.py``, then the closed loop: the
critic, the approval request in the lab's inbox (approver.py: a person opening the link and pressing
the button on the approval page, or not), the remediate function, the settle wait, the verify function
(its health probe in the lab: a real invocation burst of the incident's workload), and rollback. What EventBridge
would do when an execution ends (reconcile) the pipeline does itself.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from chaos.faults import FaultInjector
from incident_responder.account.baseline import diff_configurations, load_baseline, record_baseline
from incident_responder.account.state import configuration_from
from incident_responder.core.aws import AwsClients
from incident_responder.intake.ingest import incident_for_alert, incident_from_alert
from incident_responder.lab import approver
from incident_responder.lab.account import (
    OrdersApiResources,
    QueueConsumerResources,
    SampleAccount,
    create_function_alarms,
    create_orders_api,
    create_queue_consumer,
    create_sample_account,
)
from incident_responder.lab.engine import (
    LAB_CHANGES,
    UNANNOUNCED_LOOK_SECONDS,
    LambdaDispatcher,
    install_jsonata,
    restore_environment,
)
from incident_responder.lab.function_url import spawn_function_url, wait_until_ready
from incident_responder.lab.model_route import ModelRoute, resolve_model_route
from incident_responder.lab.scenario import Approver, Scenario, Setup
from incident_responder.lab.server import NOT_FOR_THE_LAB, Lab
from incident_responder.lab.stack import DeployedStack, deploy_stack, function_urls
from incident_responder.lab.tokens import AGENTS
from incident_responder.lab.workload import BurstResult, Workload, take_over_queue_polling, workload_for
from incident_responder.remediation.verify import InvocationSample, burst_probe, set_health_probe
from incident_responder.reporting.view import APPROVAL_KEYS
from incident_responder.state.lifecycle import (
    TERMINAL_STATUSES,
    get_incident_state,
    history,
    incident_id_of,
    states_entered,
)
from incident_responder.state.store import load_record

# The lifecycle's failure ends (the other terminal statuses are not failures).
FAILED_STATUSES = {"ERROR", "FAILED", "PROPOSAL_FAILED", "REMEDIATION_FAILED"}
# The lab compresses the closed loop's clocks: the lab's approver answers within a second, its verification
# invokes the workload itself (no metrics to wait for). `responder lab up` keeps a person's timeout.
LAB_LOOP_PARAMETERS = {"ApprovalTimeoutMinutes": "0.1", "VerifySettleSeconds": "1"}
# Functions in worker processes of their own unless a caller says otherwise. A program that replaces a handler
# in its own process before it runs the lab (e.g. `responder demo` with a broken resolver, in a test) sets it
# False: a worker imports the handler module afresh and would not see the replacement.
WORKERS_BY_DEFAULT = True
# What the lab's person does with the approval request, for each approver setting.
APPROVER_ACTS = {"auto": "approve", "reject": "reject", "none": "none"}
# Incident-state timestamps, in lifecycle order.
TIMINGS = (
    "detected_at",
    "created_at",
    "received_at",
    "investigating_at",
    "diagnosed_at",
    "proposing_at",
    "proposal_ready_at",
    "reviewing_at",
    "awaiting_approval_at",
    "approved_at",
    "remediating_at",
    "verifying_at",
    "remediated_at",
    "rolling_back_at",
    "rolled_back_at",
    "ended_at",
)


class IncidentRecord(BaseModel):
    """The final record of one incident, as ``responder run --json`` prints it."""

    incident_id: str | None
    status: str
    error_category: str | None = None
    error_reason: str | None = None
    diagnosis: dict[str, Any] | None = None
    evidence: dict[str, Any] | None = None
    proposal: dict[str, Any] | None = None
    metrics: dict[str, Any]
    execution: dict[str, Any]
    timings: dict[str, str] = {}
    workload: dict[str, Any] = {}
    review: dict[str, Any] | None = None
    approval: dict[str, Any] | None = None
    remediation: dict[str, Any] | None = None
    end_state: dict[str, Any] = {}

    @property
    def failed(self) -> bool:
        """The incident ended ERROR, FAILED or PROPOSAL_FAILED, or never reached a terminal status."""
        return self.incident_id is not None and self.status not in TERMINAL_STATUSES - FAILED_STATUSES


def _process_base_env() -> dict[str, str]:
    """What a lab process inherits besides the function's own environment: the interpreter's, and quiet."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV", "PYTHONPATH", "MOTO_PORT")
    base = {k: os.environ[k] for k in keep if k in os.environ}
    base["POWERTOOLS_TRACE_DISABLED"] = "true"
    for key in ("POWERTOOLS_LOG_LEVEL", "POWERTOOLS_METRICS_DISABLED"):
        if key in os.environ:
            base[key] = os.environ[key]
    return base


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Minutes of ordinary traffic a sample function had before its first burst in the lab (its metrics' normal).
HISTORY_MINUTES = 30


@dataclass
class LabPipeline:
    lab: Lab
    clients: AwsClients
    dispatcher: LambdaDispatcher
    stack: DeployedStack
    sample: SampleAccount
    mcp_url: str
    chaos_state: Path
    stack_overrides: dict[str, str]
    stack_parameters: dict[str, str]
    inbox_url: str = ""
    orders_api: OrdersApiResources | None = None
    queue_consumer: QueueConsumerResources | None = None
    onboarded: dict[str, str] = field(default_factory=dict)  # each workload's baseline capture time
    model_route: ModelRoute = field(default_factory=ModelRoute)  # where the agent functions' model calls go

    @property
    def workload_names(self) -> list[str]:
        """The sample workloads created and onboarded in this lab."""
        others = [w.function_name for w in (self.orders_api, self.queue_consumer) if w is not None]
        return [self.sample.function_name, *others]

    @classmethod
    @contextmanager
    def start(
        cls,
        *,
        model: str = "offline",
        parameters: dict[str, str] | None = None,
        lab: Lab | None = None,
        dispatcher: LambdaDispatcher | None = None,
        workers: bool | None = None,
        model_route: ModelRoute | None = None,
    ) -> Iterator[LabPipeline]:
        """A lab with the stack deployed. Given a running ``lab`` (and its ``dispatcher``), it is reset and reused.

        ``workers``: each function runs in execution environments of its own, in parallel (lab/workers.py);
        False calls the handlers in this process one at a time (a test that replaces a handler's internals; not
        for concurrent incidents: the process's other threads read os.environ while a handler's variables come
        and go);
        None: :data:`WORKERS_BY_DEFAULT`.
        ``model_route``: where the agents' model calls go, when resolved before the caller changed the environment
        (else resolved here, from the environment as it is).
        """
        workers = WORKERS_BY_DEFAULT if workers is None else workers
        # From the user's environment, before the lab replaces its endpoint and credentials (a ModelConfigError,
        # before anything starts, when the model cannot be reached from here).
        route = model_route or resolve_model_route(model)
        saved = dict(os.environ)
        for key in NOT_FOR_THE_LAB:
            os.environ.pop(key, None)
        own_lab = lab is None
        if lab is None:
            lab = Lab().start()
        # moto's state lives in this process: a lab started after another one must not find its stack.
        lab.reset()
        servers: list[subprocess.Popen] = []
        own_dispatcher = dispatcher is None
        dispatcher = dispatcher or LambdaDispatcher(workers=workers)
        try:
            with tempfile.TemporaryDirectory(prefix="lab-chaos-") as chaos_state:
                os.environ.update(lab.env)
                os.environ["RESPONDER_CHAOS_STATE_DIR"] = chaos_state
                from aws_lambda_powertools.utilities import parameters as ssm_parameters

                ssm_parameters.clear_caches()  # a key cached from an earlier lab in this process is stale
                install_jsonata()
                if own_dispatcher:
                    dispatcher.install()
                clients = AwsClients()
                urls = function_urls()
                ports = {url.url_id: _free_port() for url in urls}
                # Each function URL's address is the lab's stand-in for it, in front of the same handler.
                overrides = {f"{url.url_id}.FunctionUrl": f"http://127.0.0.1:{ports[url.url_id]}/" for url in urls}
                parameters = {**LAB_LOOP_PARAMETERS, **(parameters or {})}
                parameters = {**parameters, **route.parameters}
                stack = deploy_stack(
                    clients,
                    dispatcher,
                    overrides=overrides,
                    parameters={"ResponderModel": model, **parameters},
                    model_environment=route.environment,
                )
                tables = {
                    "BASELINE_TABLE": stack.physical["BaselineTable"],
                    "INCIDENT_STATE_TABLE": stack.physical["IncidentStateTable"],
                    "INCIDENT_CONTEXT_TABLE": stack.physical["IncidentContextTable"],
                    "ARTIFACTS_BUCKET": stack.physical["ArtifactsBucket"],
                }
                os.environ.update(tables)
                for url in urls:
                    function = dispatcher.functions[stack.physical[url.function_id]]
                    env = {**_process_base_env(), **lab.env, **function.environment}
                    servers.append(
                        spawn_function_url(
                            url.handler,
                            stack.physical[url.function_id],
                            ports[url.url_id],
                            env,
                            auth_type=url.auth_type,
                            timeout=function.timeout_seconds,
                        )
                    )
                # This process serves the lab: queues are read by the workloads' poller, not by moto's echo.
                take_over_queue_polling()
                sample, orders_api, queue_consumer = _create_workloads(clients, stack.output("IncidentTopicArn"))
                for server in servers:  # started side by side, ready by now or soon
                    wait_until_ready(server)
                pipeline = cls(
                    lab,
                    clients,
                    dispatcher,
                    stack,
                    sample,
                    f"http://127.0.0.1:{ports['DiagnosticsMcpFunctionUrl']}/mcp",
                    Path(chaos_state),
                    overrides,
                    parameters,
                    approver.create_inbox(clients, stack.output("ApprovalTopicArn")),
                    orders_api,
                    queue_consumer,
                    model_route=route,
                )
                pipeline.onboarded = pipeline._baseline_times()
                set_health_probe(pipeline.verification_probe())
                # The verify function's probe in a worker process: the burst runs here, where moto's state is.
                dispatcher.host_functions["workload_burst"] = pipeline.workload_burst
                yield pipeline
        finally:
            dispatcher.close()
            # All asked to stop first, then waited for: one slow server must not leave the others running.
            for server in servers:
                server.terminate()
            for server in servers:
                try:
                    server.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()
            set_health_probe(None)
            if own_dispatcher:
                dispatcher.uninstall()
            if own_lab:
                lab.stop()
            route.close()
            restore_environment(saved)

    def refresh(self, model: str = "offline", parameters: dict[str, str] | None = None) -> None:
        """A fresh lab under the running MCP servers: reset moto, redeploy the stack, re-create and onboard
        the sample workloads (table names are stable in the lab, so the servers stay valid). ``parameters``
        change the stack's from now on (e.g. ``RemediationMode``)."""
        self.stack_parameters = {**self.stack_parameters, **(parameters or {})}
        self.dispatcher.retire(self.stack.functions.values())
        self.lab.reset()
        self.stack = deploy_stack(
            self.clients,
            self.dispatcher,
            overrides=self.stack_overrides,
            # The parameters the pipeline was started with hold across refreshes (e.g. a raised breaker).
            parameters={**self.stack_parameters, "ResponderModel": model},
            model_environment=self.model_route.environment,
        )
        os.environ["ARTIFACTS_BUCKET"] = self.stack.physical["ArtifactsBucket"]
        self.sample, self.orders_api, self.queue_consumer = _create_workloads(
            self.clients, self.stack.output("IncidentTopicArn")
        )
        self.inbox_url = approver.create_inbox(self.clients, self.stack.output("ApprovalTopicArn"))
        self.onboarded = self._baseline_times()
        for stale in self.chaos_state.glob("*.json"):
            stale.unlink()

    def _baseline_times(self) -> dict[str, str]:
        return {function: load_baseline(self.clients, function).captured_at for function in self.workload_names}

    def clean_restore(self) -> list[str]:
        """Between two scenarios, without redeploying: every fault restored, then the account checked back
        at what onboarding recorded, and what an incident leaves behind cleared (incident tables, artifacts,
        queues, the workloads' logs and metrics). Returns why the lab is not clean (then :meth:`refresh`);
        an empty list means the next scenario starts as it would in a fresh lab, on warm functions."""
        for function in self.workload_names:
            self.restore(function)
        problems = []
        sfn = self.clients.get("stepfunctions")
        if sfn.list_executions(stateMachineArn=self.state_machine_arn, statusFilter="RUNNING")["executions"]:
            problems.append("an execution is still running")
        for function in self.workload_names:
            record = load_baseline(self.clients, function)
            if record.captured_at != self.onboarded.get(function):
                problems.append(f"{function}: its baseline was recorded again (a scenario's setup)")
            differences = diff_configurations(record.configuration, self._configuration(function))
            if differences:
                problems.append(f"{function}: {len(differences)} difference(s) from its baseline")
        if problems:
            return problems
        ddb = self.clients.get("dynamodb")
        for logical_id in ("IncidentStateTable", "IncidentContextTable"):
            _empty_table(ddb, self.stack.physical[logical_id])
        s3 = self.clients.get("s3")
        bucket = self.stack.physical["ArtifactsBucket"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for item in page.get("Contents", []):
                s3.delete_object(Bucket=bucket, Key=item["Key"])
        sqs = self.clients.get("sqs")
        for url in sqs.list_queues().get("QueueUrls", []):
            _drain(sqs, url)  # PurgeQueue is allowed once a minute per queue
        logs = self.clients.get("logs")
        for function in self.workload_names:
            group = f"/aws/lambda/{function}"
            for page in logs.get_paginator("describe_log_streams").paginate(logGroupName=group):
                for stream in page["logStreams"]:
                    logs.delete_log_stream(logGroupName=group, logStreamName=stream["logStreamName"])
        self.lab.clear_metrics()
        self.lab.trail.clear()  # the next incident's recent changes are its own
        for stale in self.chaos_state.glob("*.json"):
            stale.unlink()
        return []

    def workload_burst(self, function_name: str) -> list[dict[str, Any]]:
        """Three invocations of a lab workload (no alarm sent), as the health probe reads them."""
        burst = workload_for(self.clients, function_name).invoke(3, notify=False).invocations
        return [InvocationSample.model_validate(i).model_dump() for i in burst]

    def verification_probe(self) -> Any:
        """The verify function's health probe in the lab: a real burst of the workload (no alarm sent)."""
        return burst_probe(lambda clients, function_name: self.workload_burst(function_name))

    # -- one incident ----------------------------------------------------------------------------
    @property
    def state_machine_arn(self) -> str:
        return self.stack.output("StateMachineArn")

    def workload(self, function: str | None = None) -> Workload:
        """The emulator of ``function`` (default: data-processor), alarming on the stack's incident topic."""
        workload = workload_for(
            self.clients, function or self.sample.function_name, alert_topic_arn=self.stack.output("IncidentTopicArn")
        )
        workload.history_minutes = HISTORY_MINUTES
        return workload

    def inject(self, scenario: Scenario) -> list[str]:
        chaos = FaultInjector.for_function(scenario.workload.function, clients=self.clients, state_dir=self.chaos_state)
        return [line for fault in scenario.faults for line in chaos.apply(fault)]

    def restore(self, function: str | None = None) -> list[str]:
        return FaultInjector.for_function(
            function or self.sample.function_name, clients=self.clients, state_dir=self.chaos_state
        ).restore()

    def run(
        self,
        scenario: Scenario,
        *,
        on_state: Callable[[str, Any], None] | None = None,
        timeout: float = 600,
        approval: Approver = "auto",
    ) -> IncidentRecord:
        """Apply the scenario's faults, let the workload fail, follow the lifecycle to its end; the lab's
        approver does what the scenario's ``lifecycle.approval`` (else ``approval``) says."""
        started = time.monotonic()
        if scenario.workload.setup is not None:
            self.set_up(scenario.workload.function, scenario.workload.setup)
        self.inject(scenario)
        burst = self.workload(scenario.workload.function).invoke(
            scenario.workload.invocations, log_lines=scenario.workload.log_lines, app_error=scenario.workload.app_error
        )
        if burst.alert is None:
            return self._record(None, None, burst, started)
        # The incident the alert started, or the one under way for its fault that it joined.
        # (An alarm on a queue names no function: resolved, as ingest does, through the onboarded mappings.)
        incident = incident_from_alert(self.clients, burst.alert, self.stack.physical["BaselineTable"])
        incident_id = incident_for_alert(self.clients, self.stack.physical["IncidentStateTable"], incident)
        arn = f"{self.state_machine_arn.replace(':stateMachine:', ':execution:')}:{incident_id}"
        at_alert = self._configuration(scenario.workload.function)
        loop = scenario.lifecycle
        decision = loop.approval or approval
        reports: dict[str, Any] = {}

        def watch(status: str | None) -> None:
            if status == "AWAITING_APPROVAL":
                acted = approver.act(
                    self.clients, self.inbox_url, incident_id, APPROVER_ACTS[decision], replay=loop.replay_approval
                )
                reports["approver"] = acted.model_dump(exclude_none=True)
            elif status == "VERIFYING" and loop.reinject_during_verifying:
                reports["reinjected"] = self.inject(scenario)

        if loop.remediation_failure is not None:
            failure = loop.remediation_failure
            self.lab.fail_requests(failure.operation, times=failure.times, code=failure.code)
        try:
            execution = self.follow(arn, on_state=on_state, on_status=watch, timeout=timeout)
        finally:
            if loop.remediation_failure is not None:
                self.lab.clear_failures()
        ended = {"detail": {"executionArn": arn, "status": execution["status"]}}
        # In AWS an EventBridge rule hands the end to the reconcile function here (moto cannot deliver it), as an
        # asynchronous invocation: retried twice, then kept in the function's dead-letter queue.
        if execution["status"] != "SUCCEEDED":
            self.dispatcher.invoke_async(self.stack.functions["ReconcileFunction"], ended)
        # ... and, on every end, the report function: the page to the artifacts bucket, its link to the topic.
        self.dispatcher.invoke_async(self.stack.functions["ReportFunction"], ended)
        record = self._record(incident_id, execution, burst, started)
        end = self._configuration(scenario.workload.function)
        baseline = load_baseline(self.clients, scenario.workload.function).configuration
        record.end_state = {
            # What the account shows once the lifecycle ended: back at its baseline (remediated), or exactly
            # as the alert found it (nothing applied, or everything applied undone).
            "matches_baseline": not diff_configurations(baseline, end),
            "unchanged_since_alert": not diff_configurations(at_alert, end),
            "differences_from_baseline": [d.model_dump() for d in diff_configurations(baseline, end)][:20],
        }
        if reports:
            record.approval = {**(record.approval or {}), **reports}
        return record

    def _configuration(self, function: str) -> Any:
        raw = self.clients.get("lambda").get_function_configuration(FunctionName=function)
        return configuration_from(self.clients, raw)

    def set_up(self, function: str, setup: Setup) -> None:
        """The function's healthy configuration, then its baseline recorded again: what it was onboarded with."""
        lam = self.clients.get("lambda")
        given = setup.model_fields_set
        if "reserved_concurrency" in given:
            if setup.reserved_concurrency is None:
                lam.delete_function_concurrency(FunctionName=function)
            else:
                lam.put_function_concurrency(
                    FunctionName=function, ReservedConcurrentExecutions=setup.reserved_concurrency
                )
        changes = {"Timeout": setup.timeout, "MemorySize": setup.memory}
        changes = {key: value for key, value in changes.items() if value is not None}
        if changes:
            lam.update_function_configuration(FunctionName=function, **changes)
        record_baseline(self.clients, function)
        # Not what onboarding recorded, even when recorded within the same second: the next scenario needs a refresh.
        self.onboarded.pop(function, None)

    def follow(
        self,
        arn: str,
        *,
        on_state: Callable[[str, Any], None] | None = None,
        on_status: Callable[[str | None], None] | None = None,
        timeout: float = 600,
    ) -> dict[str, Any]:
        """Wait for the execution to end, reporting each state (name, time entered) as it is entered, and each
        lifecycle status the incident-state item takes. The history is read only for ``on_state``: reading it
        whole at every poll would cost the lab more CPU than the incident itself."""
        sfn = self.clients.get("stepfunctions")
        incident_id = incident_id_of(arn)
        # Event-driven: moto announces history events and table writes in this process (engine.LAB_CHANGES);
        # this looks again only when something it reads changed.
        kinds = ("execution", "table") if on_status else ("execution",)
        changes = LAB_CHANGES.seen(*kinds)
        seen, status = 0, None
        deadline = time.monotonic() + timeout
        while True:
            try:
                described = sfn.describe_execution(executionArn=arn)
            except sfn.exceptions.ExecutionDoesNotExist:
                if time.monotonic() > deadline:
                    raise
                changes = LAB_CHANGES.wait(changes, *kinds, timeout=UNANNOUNCED_LOOK_SECONDS)
                continue
            if on_state:
                entered = [e for e in history(sfn, arn) if "stateEnteredEventDetails" in e]
                for event in entered[seen:]:
                    on_state(event["stateEnteredEventDetails"]["name"], event["timestamp"])
                seen = len(entered)
            if on_status:
                now = (get_incident_state(self.clients, incident_id) or {}).get("status")
                if now != status:
                    status = now
                    on_status(now)
            left = deadline - time.monotonic()
            if described["status"] != "RUNNING" or left <= 0:
                return described
            changes = LAB_CHANGES.wait(changes, *kinds, timeout=min(left, UNANNOUNCED_LOOK_SECONDS))

    def _record(
        self, incident_id: str | None, execution: dict[str, Any] | None, burst: BurstResult, started: float
    ) -> IncidentRecord:
        sfn = self.clients.get("stepfunctions")
        latency = int((time.monotonic() - started) * 1000)
        workload = {"invocations": [i.status for i in burst.invocations], "alert": (burst.alert or {}).get("AlarmName")}
        if incident_id is None or execution is None:
            return IncidentRecord(
                incident_id=None, status="NO_ALERT", metrics={"latency_ms": latency}, execution={}, workload=workload
            )
        state = get_incident_state(self.clients, incident_id) or {}
        context = load_record(self.clients, incident_id, "investigation") or {}
        summary = context.get("summary", {})
        metrics = summary.get("metrics", {})
        proposal_record = (load_record(self.clients, incident_id, "proposal") or {}).get("summary", {})
        proposal_metrics = proposal_record.get("metrics", {})
        visited = states_entered(sfn, execution["executionArn"])
        timings = {k: state[k] for k in TIMINGS if k in state}
        review_record = (load_record(self.clients, incident_id, "review") or {}).get("summary", {})
        approval = {key: state[key] for key in APPROVAL_KEYS if key in state}
        agents = [metrics, proposal_metrics, review_record.get("metrics", {})]
        remediation = {
            key: state[key]
            for key in ("verification_json", "undo_json", "rollback_reason", "applied_actions")
            if key in state
        }
        return IncidentRecord(
            incident_id=incident_id,
            status=state.get("status", "UNKNOWN"),
            error_category=state.get("error_category"),
            error_reason=state.get("error_reason"),
            diagnosis=summary.get("diagnosis"),
            evidence=summary.get("evidence"),
            proposal=proposal_record.get("proposal"),
            metrics={
                "tool_calls": sum(m.get("tool_calls", 0) for m in agents),
                "llm_calls": sum(m.get("llm_calls", 0) for m in agents),
                "total_tokens": sum(m.get("total_tokens", 0) for m in agents),
                "grounded_ratio": metrics.get("grounded_ratio"),
                "latency_ms": latency,
                "input_tokens": sum(m.get("input_tokens", 0) for m in agents),
                "output_tokens": sum(m.get("output_tokens", 0) for m in agents),
                "cache_read_tokens": sum(m.get("cache_read_tokens", 0) for m in agents),
                "cache_write_tokens": sum(m.get("cache_write_tokens", 0) for m in agents),
                "model_ms": sum(m.get("model_ms", 0) for m in agents),
                "tool_ms": sum(m.get("tool_ms", 0) for m in agents),
                "tool_output_bytes": sum(m.get("tool_output_bytes", 0) for m in agents),
                "tokens_by_agent": dict(zip(AGENTS, (m.get("total_tokens", 0) for m in agents), strict=True)),
            },
            execution={
                "name": execution["name"],
                "arn": execution["executionArn"],
                "status": execution["status"],
                "states_visited": visited,
                "terminal": state.get("status") in TERMINAL_STATUSES,
            },
            timings=timings,
            workload=workload,
            review=review_record or None,
            approval=approval or None,
            remediation=remediation or None,
        )


def _drain(sqs: Any, url: str) -> None:
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60).get("Messages"):
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
        )


def _empty_table(ddb: Any, table: str) -> None:
    keys = [k["AttributeName"] for k in ddb.describe_table(TableName=table)["Table"]["KeySchema"]]
    for page in ddb.get_paginator("scan").paginate(
        TableName=table,
        ProjectionExpression=", ".join(f"#k{i}" for i in range(len(keys))),
        ExpressionAttributeNames={f"#k{i}": key for i, key in enumerate(keys)},
    ):
        for item in page.get("Items", []):
            ddb.delete_item(TableName=table, Key={key: item[key] for key in keys})


def _create_workloads(
    clients: AwsClients, incident_topic: str
) -> tuple[SampleAccount, OrdersApiResources, QueueConsumerResources]:
    """The three sample workloads, each onboarded (its baseline recorded) with the alarms a user would give it:
    Errors and Throttles, notifying the incident topic (the lab's emulation sends what they would send; moto
    keeps them for what reads them, as `responder doctor` does)."""
    sample = create_sample_account(clients, responder_resources=False)
    orders_api = create_orders_api(clients)
    queue_consumer = create_queue_consumer(clients)
    for name in (sample.function_name, orders_api.function_name, queue_consumer.function_name):
        record_baseline(clients, name)
        create_function_alarms(clients, name, [incident_topic])
    return sample, orders_api, queue_consumer


def write_artifacts(pipeline: LabPipeline, record: IncidentRecord, out_dir: Path) -> dict[str, Path]:
    """The execution history, a picture of the path taken, the final record and the incident's report (the
    page ``responder report`` writes), under ``out_dir``/<incident id>: all from one read of the stores."""
    import json

    from incident_responder.reporting.report import collect, execution_svg, render_html

    folder = out_dir / (record.incident_id or "no-incident")
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"record": folder / "record.json"}
    paths["record"].write_text(record.model_dump_json(indent=2))
    detail = collect(pipeline.clients, record.incident_id) if record.incident_id else None
    if detail is None:
        return paths
    if detail["history"]:
        paths["history"] = folder / "history.json"
        paths["history"].write_text(json.dumps(detail["history"], indent=2, default=str))
    picture = execution_svg(detail)
    if picture:
        paths["picture"] = folder / "execution.svg"
        paths["picture"].write_text(picture)
    paths["report"] = folder / "report.html"
    paths["report"].write_text(render_html(detail))
    return paths
