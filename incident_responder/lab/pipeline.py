"""The whole pipeline on the embedded lab: the deployed stack, the sample workload, and scenario runs.

    with LabPipeline.start() as pipeline:
        record = pipeline.run(load_scenario("scenarios/s3-policy-revoked.yaml"))

``start`` runs moto, deploys ``template.yaml`` (stack.py), starts the diagnostics MCP server as its
own process where the function URL would be, creates and onboards ``data-processor``. ``run`` applies
a scenario's faults with chaos, lets the workload fail and raise its alarm on the stack's SNS topic;
from there everything is the deployed path: SNS -> ingest -> Step Functions -> investigate -> MCP.
What EventBridge would do when an execution ends (reconcile) the pipeline does itself.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from chaos.faults import FaultInjector
from incident_responder.alerts import parse_alert
from incident_responder.aws import AwsClients
from incident_responder.baseline import record_baseline
from incident_responder.lab.account import SampleAccount, create_sample_account
from incident_responder.lab.engine import LambdaDispatcher, history, install_jsonata, wait_for_execution
from incident_responder.lab.server import Lab
from incident_responder.lab.stack import DeployedStack, deploy_stack
from incident_responder.lab.workload import BurstResult, DataProcessor
from incident_responder.lifecycle import TERMINAL_STATUSES, get_incident_state, reconcile_execution
from incident_responder.mcp_auth import DEFAULT_API_KEY_PARAMETER
from incident_responder.scenario import Scenario
from incident_responder.store import load_record


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the diagnostics MCP server exited with code {proc.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"the diagnostics MCP server did not answer at {url}")


@dataclass
class LabPipeline:
    lab: Lab
    clients: AwsClients
    dispatcher: LambdaDispatcher
    stack: DeployedStack
    sample: SampleAccount
    mcp_url: str
    chaos_state: Path

    @classmethod
    @contextmanager
    def start(cls, *, model: str = "offline", parameters: dict[str, str] | None = None) -> Iterator[LabPipeline]:
        saved = dict(os.environ)
        lab = Lab().start()
        server: subprocess.Popen | None = None
        dispatcher = LambdaDispatcher()
        try:
            with tempfile.TemporaryDirectory(prefix="lab-chaos-") as chaos_state:
                os.environ.update(lab.env)
                os.environ["RESPONDER_CHAOS_STATE_DIR"] = chaos_state
                install_jsonata()
                dispatcher.install()
                clients = AwsClients()
                key = secrets.token_urlsafe(24)
                clients.get("ssm").put_parameter(
                    Name=DEFAULT_API_KEY_PARAMETER, Value=key, Type="SecureString", Overwrite=True
                )
                port = _free_port()
                # The function URL's place is taken by the same server code running as its own process.
                stack = deploy_stack(
                    clients,
                    dispatcher,
                    overrides={"DiagnosticsMcpFunctionUrl.FunctionUrl": f"http://127.0.0.1:{port}/"},
                    parameters={"ResponderModel": model, **(parameters or {})},
                )
                tables = {
                    "BASELINE_TABLE": stack.physical["BaselineTable"],
                    "INCIDENT_STATE_TABLE": stack.physical["IncidentStateTable"],
                    "INCIDENT_CONTEXT_TABLE": stack.physical["IncidentContextTable"],
                    "ARTIFACTS_BUCKET": stack.physical["ArtifactsBucket"],
                }
                os.environ.update(tables)
                server = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "incident_responder.cli",
                        "mcp",
                        "serve",
                        "diagnostics",
                        "--port",
                        str(port),
                    ],
                    env={k: v for k, v in os.environ.items() if k != "MCP_API_KEY"},
                )
                _wait_healthy(f"http://127.0.0.1:{port}/health", server)
                sample = create_sample_account(clients, api_key=key, responder_resources=False)
                record_baseline(clients, sample.function_name)
                yield cls(lab, clients, dispatcher, stack, sample, f"http://127.0.0.1:{port}/mcp", Path(chaos_state))
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=10)
            dispatcher.uninstall()
            lab.stop()
            os.environ.clear()
            os.environ.update(saved)

    # -- one incident ----------------------------------------------------------------------------
    @property
    def state_machine_arn(self) -> str:
        return self.stack.output("StateMachineArn")

    def workload(self, function: str | None = None) -> DataProcessor:
        return DataProcessor(
            self.clients, function or self.sample.function_name, alert_topic_arn=self.stack.output("IncidentTopicArn")
        )

    def inject(self, scenario: Scenario) -> list[str]:
        chaos = FaultInjector.for_function(scenario.workload.function, clients=self.clients, state_dir=self.chaos_state)
        return [line for fault in scenario.faults for line in chaos.apply(fault)]

    def restore(self, function: str | None = None) -> list[str]:
        return FaultInjector.for_function(
            function or self.sample.function_name, clients=self.clients, state_dir=self.chaos_state
        ).restore()

    def run(
        self, scenario: Scenario, *, on_state: Callable[[str, dict[str, Any]], None] | None = None, timeout: float = 600
    ) -> IncidentRecord:
        """Apply the scenario's faults, let the workload fail, follow the lifecycle to its end."""
        started = time.monotonic()
        self.inject(scenario)
        burst = self.workload(scenario.workload.function).invoke(
            scenario.workload.invocations, log_lines=scenario.workload.log_lines, app_error=scenario.workload.app_error
        )
        if burst.alert is None:
            return self._record(None, None, burst, started)
        incident = parse_alert(burst.alert)
        arn = f"{self.state_machine_arn.replace(':stateMachine:', ':execution:')}:{incident.incident_id}"
        execution = self.follow(arn, on_state=on_state, timeout=timeout)
        if execution["status"] != "SUCCEEDED":
            # In AWS an EventBridge rule runs the reconcile function here; moto cannot deliver it.
            reconcile = self.stack.functions["ReconcileFunction"]
            self.dispatcher.invoke(reconcile, {"detail": {"executionArn": arn, "status": execution["status"]}})
        return self._record(incident.incident_id, execution, burst, started)

    def follow(
        self, arn: str, *, on_state: Callable[[str, dict[str, Any]], None] | None = None, timeout: float = 600
    ) -> dict[str, Any]:
        """Wait for the execution to end, reporting each state as it is entered."""
        sfn = self.clients.get("stepfunctions")
        seen = 0
        deadline = time.monotonic() + timeout
        while True:
            try:
                described = sfn.describe_execution(executionArn=arn)
            except sfn.exceptions.ExecutionDoesNotExist:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
                continue
            entered = [e for e in history(sfn, arn) if "stateEnteredEventDetails" in e]
            for event in entered[seen:]:
                if on_state:
                    on_state(event["stateEnteredEventDetails"]["name"], event)
            seen = len(entered)
            if described["status"] != "RUNNING" or time.monotonic() > deadline:
                return wait_for_execution(sfn, arn, timeout=1)
            time.sleep(0.05)

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
        visited = [
            e["stateEnteredEventDetails"]["name"]
            for e in history(sfn, execution["executionArn"])
            if "stateEnteredEventDetails" in e
        ]
        timings = {k: v for k, v in state.items() if k.endswith("_at") and k not in ("expires_at",)}
        return IncidentRecord(
            incident_id=incident_id,
            status=state.get("status", "UNKNOWN"),
            error_category=state.get("error_category"),
            error_reason=state.get("error_reason"),
            diagnosis=summary.get("diagnosis"),
            evidence=summary.get("evidence"),
            proposal=None,
            metrics={
                "tool_calls": metrics.get("tool_calls", 0),
                "llm_calls": metrics.get("llm_calls", 0),
                "total_tokens": metrics.get("total_tokens", 0),
                "grounded_ratio": metrics.get("grounded_ratio"),
                "latency_ms": latency,
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
        )

    def reconcile(self, arn: str, status: str) -> str:
        return reconcile_execution(self.clients, arn, status)
