"""The whole pipeline on the embedded lab: the deployed stack and the sample workloads, started and refreshed.

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

import dataclasses
import json
import os
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from incident_responder.account.baseline import load_baseline, record_baseline
from incident_responder.core.aws import AwsClients
from incident_responder.core.members import Member
from incident_responder.lab import approver, heap
from incident_responder.lab.account.data_processor import SampleAccount, create_sample_account
from incident_responder.lab.account.orders_api import OrdersApiResources, create_orders_api
from incident_responder.lab.account.queue_consumer import QueueConsumerResources, create_queue_consumer
from incident_responder.lab.account.resources import create_function_alarms
from incident_responder.lab.engine import LambdaDispatcher, restore_environment
from incident_responder.lab.environment import NOT_FOR_THE_LAB
from incident_responder.lab.fork_server import ForkedProcess
from incident_responder.lab.function_url import spawn_function_url, wait_until_ready
from incident_responder.lab.model_route import ModelRoute, resolve_model_route
from incident_responder.lab.moto_patches.sqs import take_over_queue_polling
from incident_responder.lab.organisation import Organisation, admin_clients, deploy_member, member_view
from incident_responder.lab.pipeline.cleanup import BetweenScenarios
from incident_responder.lab.pipeline.incident import IncidentRuns
from incident_responder.lab.pipeline.record import IncidentRecords
from incident_responder.lab.scenario import StackParameters
from incident_responder.lab.server import Lab
from incident_responder.lab.stack import DeployedStack, deploy_stack
from incident_responder.lab.template import function_urls
from incident_responder.remediation.health import set_health_probe

# The lab compresses the closed loop's clocks: the lab's approver answers within a second, its verification
# invokes the workload itself (no metrics to wait for). `responder lab up` keeps a person's timeout.
LAB_LOOP_PARAMETERS = {"ApprovalTimeoutMinutes": "0.1", "VerifySettleSeconds": "1"}
# Functions in worker processes of their own unless a caller says otherwise. A program that replaces a handler
# in its own process before it runs the lab (e.g. `responder demo` with a broken proposer, in a test) sets it
# False: a worker imports the handler module afresh and would not see the replacement.
WORKERS_BY_DEFAULT = True


def _process_base_env() -> dict[str, str]:
    """What a lab process inherits besides the function's own environment: the interpreter's, and quiet."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV", "PYTHONPATH", "MOTO_PORT")
    base = {k: os.environ[k] for k in keep if k in os.environ}
    base["POWERTOOLS_TRACE_DISABLED"] = "true"
    for key in ("POWERTOOLS_LOG_LEVEL", "POWERTOOLS_METRICS_DISABLED"):
        if key in os.environ:
            base[key] = os.environ[key]
    return base


def _listening() -> socket.socket:
    """A loopback port held for a function URL: bound and listening here, handed to its process (a port only
    looked up free could be taken by another lab starting at the same moment before the process bound it)."""
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen(128)
    return held


def _spawn_function_urls(
    lab: Lab, stack: DeployedStack, dispatcher: LambdaDispatcher, urls: list[Any], held: dict[str, socket.socket]
) -> list[subprocess.Popen | ForkedProcess]:
    """A server for each function URL, in front of its function's handler with its environment, on the socket
    ``held`` for it (closed here: the process has its own copy). Started side by side: wait_until_ready each."""
    servers: list[subprocess.Popen | ForkedProcess] = []
    for url in urls:
        function = dispatcher.functions[stack.physical[url.function_id]]
        env = {**_process_base_env(), **lab.env, **function.environment}
        if stack.role_keys:  # each function signs with its own role's credentials
            accepted = {**stack.role_keys, lab.env["AWS_ACCESS_KEY_ID"]: lab.env["AWS_SECRET_ACCESS_KEY"]}
            env["LAB_ACCEPTED_KEYS"] = json.dumps(accepted)
        sock = held.pop(url.url_id)
        servers.append(
            spawn_function_url(
                url.handler,
                stack.physical[url.function_id],
                sock.getsockname()[1],
                env,
                auth_type=url.auth_type,
                timeout=function.timeout_seconds,
                listening=sock,
            )
        )
        sock.close()
    return servers


def _stop(servers: list[subprocess.Popen | ForkedProcess]) -> None:
    """All asked to stop first, then waited for: one slow server must not leave the others running."""
    for server in servers:
        server.terminate()
    for server in servers:
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@dataclass
class LabPipeline(IncidentRuns, BetweenScenarios, IncidentRecords):
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
    set_up_undo: dict[str, Any] = field(default_factory=dict)  # how to put back what a scenario's setup changed
    model_route: ModelRoute = field(default_factory=ModelRoute)  # where the agent functions' model calls go
    organisation: Organisation | None = None
    # An organisation lab's members: each one's clients (the lab's, routed as the responder's) and sample workload.
    members: dict[Member, tuple[AwsClients, SampleAccount]] = field(default_factory=dict)
    url_servers: list[Any] = field(default_factory=list)  # the function URLs' servers (stopped when the lab ends)
    counting: bool = False  # the responder's AWS calls counted per incident (start's count_calls)

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
        organisation: Organisation | None = None,
        count_calls: bool = False,
    ) -> Iterator[LabPipeline]:
        """A lab with the stack deployed. Given a running ``lab`` (and its ``dispatcher``), it is reset and reused.

        ``workers``: each function runs in execution environments of its own, in parallel (lab/workers.py);
        False calls the handlers in this process one at a time (a test that replaces a handler's internals; not
        for concurrent incidents: the process's other threads read os.environ while a handler's variables come
        and go);
        None: :data:`WORKERS_BY_DEFAULT`.
        ``model_route``: where the agents' model calls go, when resolved before the caller changed the environment
        (else resolved here, from the environment as it is).
        ``organisation``: member accounts and Regions, each with the member template and a sample workload; the
        central functions act as their roles (:mod:`incident_responder.lab.organisation`).
        ``count_calls``: the AWS calls of the responder's functions are counted per incident (the bench): they act as
        their roles, so their calls are told apart from the lab's own by the key that signs them.
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
        servers: list[subprocess.Popen | ForkedProcess] = []
        own_dispatcher = dispatcher is None
        dispatcher = dispatcher or LambdaDispatcher(workers=workers)
        try:
            with tempfile.TemporaryDirectory(prefix="lab-chaos-") as chaos_state:
                os.environ.update(lab.env)
                os.environ["RESPONDER_CHAOS_STATE_DIR"] = chaos_state
                from aws_lambda_powertools.utilities import parameters as ssm_parameters

                ssm_parameters.clear_caches()  # a key cached from an earlier lab in this process is stale
                if own_dispatcher:
                    dispatcher.install()
                clients = AwsClients()
                urls = function_urls()
                held = {url.url_id: _listening() for url in urls}
                ports = {url_id: sock.getsockname()[1] for url_id, sock in held.items()}
                # Each function URL's address is the lab's stand-in for it, in front of the same handler.
                overrides = {f"{url.url_id}.FunctionUrl": f"http://127.0.0.1:{ports[url.url_id]}/" for url in urls}
                parameters = {**LAB_LOOP_PARAMETERS, **(parameters or {})}
                parameters = {**parameters, **route.parameters, **(organisation.parameters if organisation else {})}
                stack = deploy_stack(
                    clients,
                    dispatcher,
                    overrides=overrides,
                    parameters={"ResponderModel": model, **parameters},
                    model_environment=route.environment,
                    as_their_roles=organisation is not None or count_calls,
                )
                lab.count_calls(count_calls)
                tables = {
                    "BASELINE_TABLE": stack.physical["BaselineTable"],
                    "INCIDENT_STATE_TABLE": stack.physical["IncidentStateTable"],
                    "INCIDENT_CONTEXT_TABLE": stack.physical["IncidentContextTable"],
                    "ARTIFACTS_BUCKET": stack.physical["ArtifactsBucket"],
                }
                os.environ.update(tables)
                servers += _spawn_function_urls(lab, stack, dispatcher, urls, held)
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
                    organisation=organisation,
                    url_servers=servers,
                    counting=count_calls,
                )
                pipeline._set_up_members()
                pipeline.onboarded = pipeline._baseline_times()
                set_health_probe(pipeline.verification_probe())
                # The verify function's probe in a worker process: the burst runs here, where moto's state is.
                dispatcher.host_functions["workload_burst"] = pipeline.workload_burst  # (a member's by ARN)
                heap.settle()
                yield pipeline
        finally:
            lab.count_calls(False)
            dispatcher.close()
            _stop(servers)
            set_health_probe(None)
            if own_dispatcher:
                dispatcher.uninstall()
            if own_lab:
                lab.stop()
            route.close()
            restore_environment(saved)

    def refresh(
        self,
        model: str = "offline",
        parameters: dict[str, str] | None = None,
        *,
        scenario_parameters: dict[str, str] | None = None,
    ) -> None:
        """A fresh lab under the running MCP servers: reset moto, redeploy the stack, re-create and onboard
        the sample workloads (table names are stable in the lab, so the servers stay valid). ``parameters``
        change the stack's from now on (e.g. ``RemediationMode``); ``scenario_parameters``: exactly these of the
        parameters a scenario may set (the others of them back at the template's defaults)."""
        self.stack_parameters = {**self.stack_parameters, **(parameters or {})}
        if scenario_parameters is not None:
            kept = {k: v for k, v in self.stack_parameters.items() if k not in StackParameters.model_fields}
            self.stack_parameters = {**kept, **scenario_parameters}
        self.dispatcher.retire(self.stack.functions.values())
        held = self._new_function_urls() if self.organisation is not None else None
        self.lab.reset()
        self.stack = deploy_stack(
            self.clients,
            self.dispatcher,
            overrides=self.stack_overrides,
            # The parameters the pipeline was started with hold across refreshes (e.g. a raised breaker).
            parameters={**self.stack_parameters, "ResponderModel": model},
            model_environment=self.model_route.environment,
            as_their_roles=self.organisation is not None or self.counting,
            # The function URL servers keep running: each function keeps its credentials (and its server's accepted).
            role_credentials=self.stack.role_credentials,
        )
        os.environ["ARTIFACTS_BUCKET"] = self.stack.physical["ArtifactsBucket"]
        if held is not None:
            self._start_function_urls(held)
        self.sample, self.orders_api, self.queue_consumer = _create_workloads(
            self.clients, self.stack.output("IncidentTopicArn")
        )
        self.inbox_url = approver.create_inbox(self.clients, self.stack.output("ApprovalTopicArn"))
        self._set_up_members()
        self.onboarded = self._baseline_times()
        self.set_up_undo.clear()  # a fresh lab: nothing of a setup's to put back
        heap.settle()  # the replaced stack's objects collected, the new one's frozen
        for stale in self.chaos_state.glob("*.json"):
            stale.unlink()

    def runs_with(self, scenario_parameters: dict[str, str]) -> bool:
        """Whether the stack runs with exactly these of the parameters a scenario may set (the others unset)."""
        current = {k: v for k, v in self.stack_parameters.items() if k in StackParameters.model_fields}
        return current == scenario_parameters

    def _new_function_urls(self) -> dict[str, socket.socket]:
        """New ports for the function URLs, the stack's overrides pointing at them (its redeploy names them), the
        running servers stopped: a redeploy gives new execution environments on AWS, and in an organisation lab the
        member credentials they assumed went with moto's reset."""
        _stop(self.url_servers)
        held = {url.url_id: _listening() for url in function_urls()}
        for url_id, sock in held.items():
            self.stack_overrides[f"{url_id}.FunctionUrl"] = f"http://127.0.0.1:{sock.getsockname()[1]}/"
        self.mcp_url = f"{self.stack_overrides['DiagnosticsMcpFunctionUrl.FunctionUrl']}mcp"
        return held

    def _start_function_urls(self, held: dict[str, socket.socket]) -> None:
        started = _spawn_function_urls(self.lab, self.stack, self.dispatcher, function_urls(), held)
        self.url_servers[:] = started  # the same list the lab stops at its end
        for server in started:
            wait_until_ready(server)

    def _set_up_members(self) -> None:
        """Each member account's template (once per account and Region) and sample workload, onboarded from the
        central side (its baseline in the central table, by ARN); the lab's process knows its own account, as the
        functions do (HOME_ACCOUNT), so it keys a member's incidents as they do."""
        self.members = {}
        if self.organisation is None:
            return
        central = Member(self.stack.account, self.stack.region)
        os.environ["HOME_ACCOUNT"] = central.account
        for member in self.organisation.members:
            admin = admin_clients(self.lab.env, member.account, member.region)
            deploy_member(admin, self.organisation, member, central, self.stack.name)
            view = member_view(self.clients, admin, member)
            sample = create_sample_account(view, responder_resources=False)
            record_baseline(view, sample.function_name)
            self.members[member] = (view, sample)

    def member(self, account: str, region: str) -> LabPipeline:
        """This pipeline acting in a member account and Region: its incident runs (inject, the workload's burst and
        alarm, the lifecycle followed, the end state) are the member's sample workload's."""
        view, sample = self.members[Member(account, region)]
        return dataclasses.replace(self, clients=view, sample=sample)

    def _baseline_times(self) -> dict[str, str]:
        return {function: load_baseline(self.clients, function).captured_at for function in self.workload_names}


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
