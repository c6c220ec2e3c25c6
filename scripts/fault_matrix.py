"""`make fault-matrix`: how the deployed lifecycle ends under faults, one Markdown row per case.

Every case runs in ONE embedded lab (one LabPipeline: moto, template.yaml deployed, the MCP servers in
their function-URL processes), refreshed between cases. Alerts enter on the stack's SNS topic, so each
one takes the deployed path: SNS -> ingest -> Step Functions (the real ASL) -> investigate -> SigV4 MCP
-> diagnostics function URL -> proposer. What EventBridge would do when an execution does not succeed
(run reconcile) the script does, as LabPipeline.run does. Columns:

    terminal status   the final status in the incident-state table (of the incident the case is about)
    error_category    recorded with it ("-" when none)
    time              alert -> terminal, in seconds: the incident's recorded ended_at minus its
                      detected_at (the alarm's or alert's own time); for several incidents, the first
                      alert to the last end. A case that starts no incident: publishing the first alert
                      -> every alert in the dead-letter queue, by the clock
    lost              alerts that produced neither an incident record nor a dead-letter message with a reason
    duplicated        executions or incident records beyond the number the case expects

Cases 1-10 run with RemediationMode=propose_only (the lifecycle through failures up to PROPOSAL_READY); cases
11-17 attack the closed loop, redeployed with RemediationMode=closed_loop and the most permissive approval settings
(AutoApprove=low, AutoApproveIamAndNetwork=true; case 14 a person): overlapping incidents on one function, a
poisoned baseline, a recurrence seconds after the end, an edited approval link, a target in another account, an
execution stopped while its change is unverified, and a fault fixed by another incident while this one waits.

Measurements, not a test (the suite has its own); the script still exits 1 when a case does not end as
the design says, and lists why under the table. Offline model unless a case replaces it. The breaker
case runs first: refresh() redeploys with the template's defaults, so MaxIncidentsPerFunctionPerHour=2
given to start() holds only until the first refresh.

    .venv/bin/python scripts/fault_matrix.py
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
CASE_TIMEOUT = 30.0  # seconds a case's executions get before they are stopped (a safety net: ~2-10 s each)
TIMEOUT_FAULT = {"name": "timeout", "faults": [{"kind": "timeout", "seconds": 1}]}


@dataclass
class Row:
    number: int
    case: str
    status: str = "-"
    category: str = "-"
    seconds: float | None = None
    seconds_aside: str = ""  # said next to the time (e.g. waits that were skipped)
    lost: int = 0
    duplicated: int = 0
    note: str = ""
    problems: list[str] = field(default_factory=list)

    def expect(self, condition: bool, problem: str) -> None:
        if not condition:
            self.problems.append(problem)


# -- the lab, as the cases read it -------------------------------------------------------------------
def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def project_alert(error_type: str, function: str = "data-processor") -> str:
    return json.dumps({"function_name": function, "detected_at": now_iso(), "error_type": error_type})


def publish(p, messages: list[str]) -> None:
    sns, topic = p.clients.get("sns"), p.stack.output("IncidentTopicArn")
    for message in messages:
        sns.publish(TopicArn=topic, Message=message)


def executions(p) -> list[dict[str, Any]]:
    sfn = p.clients.get("stepfunctions")
    pages = sfn.get_paginator("list_executions").paginate(stateMachineArn=p.state_machine_arn)
    return [run for page in pages for run in page["executions"]]


def incidents(p) -> dict[str, dict[str, Any]]:
    """Every incident record (not the group and budget items), by incident id."""
    from incident_responder.state import keys
    from incident_responder.state.lifecycle import get_incident_state

    table = p.stack.physical["IncidentStateTable"]
    pages = (
        p.clients.get("dynamodb").get_paginator("scan").paginate(TableName=table, ProjectionExpression="incident_id")
    )
    ids = [item["incident_id"]["S"] for page in pages for item in page["Items"]]
    return {i: get_incident_state(p.clients, table, i) for i in ids if keys.is_incident(i)}


def wait_for_status(p, incident_id: str, wanted: Callable[[str], bool], timeout: float = CASE_TIMEOUT) -> str:
    from incident_responder.state.lifecycle import get_incident_state

    table = p.stack.physical["IncidentStateTable"]
    deadline = time.monotonic() + timeout
    while True:
        status = (get_incident_state(p.clients, table, incident_id) or {}).get("status", "")
        if wanted(status) or time.monotonic() > deadline:
            return status
        time.sleep(0.05)


def reconcile(p, arn: str, status: str) -> str:
    """What the EventBridge rule on execution status changes does in AWS: run the reconcile function."""
    result = p.dispatcher.invoke(
        p.stack.functions["ReconcileFunction"], {"detail": {"executionArn": arn, "status": status}}
    )
    return result["action"]


def settle(p, timeout: float = CASE_TIMEOUT) -> dict[str, str]:
    """Every execution followed to its end (one still running at the deadline is stopped, as the sweep
    would), and reconciled unless it succeeded. Returns each execution's status by name."""
    sfn = p.clients.get("stepfunctions")
    deadline = time.monotonic() + timeout
    ended = {}
    for run in executions(p):
        described = p.follow(run["executionArn"], timeout=max(0.1, deadline - time.monotonic()))
        if described["status"] == "RUNNING":
            sfn.stop_execution(executionArn=run["executionArn"], error="FaultMatrix", cause="case deadline passed")
            described = p.follow(run["executionArn"], timeout=CASE_TIMEOUT)
        if described["status"] != "SUCCEEDED":
            reconcile(p, run["executionArn"], described["status"])
        ended[run["name"]] = described["status"]
    return ended


def drain_dead_letters(p) -> list[tuple[str, str]]:
    """(the alert as it came, the reason) for every message in the alerts' dead-letter queue, emptied."""
    sqs, url = p.clients.get("sqs"), p.stack.output("AlertsDeadLetterQueueUrl")
    letters = []
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]).get(
        "Messages", []
    ):
        for message in batch:
            attributes, body = message.get("MessageAttributes", {}), message["Body"]
            if "reason" in attributes:  # ingest's own letter: the alert, base64 when SQS could not carry it
                if attributes.get("body_encoding", {}).get("StringValue") == "base64":
                    body = base64.b64decode(body).decode("utf-8", "surrogatepass")
                letters.append((body, attributes["reason"]["StringValue"]))
            else:  # Lambda's own dead-letter queue: the SNS event whose invocation failed, with the error
                with contextlib.suppress(ValueError, LookupError, TypeError, AttributeError):
                    body = json.loads(body)["Records"][0]["Sns"]["Message"]
                letters.append((body, attributes.get("ErrorMessage", {}).get("StringValue", "")))
        sqs.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)]
        )
    return letters


def count_lost(p, alerts: list[str], letters: list[tuple[str, str]]) -> int:
    """Alerts accounted for by neither a dead-letter message with a reason nor an incident record."""
    from incident_responder.intake.alerts import parse_alert
    from incident_responder.intake.errors import MalformedAlertError
    from incident_responder.intake.ingest import incident_for_alert
    from incident_responder.state.lifecycle import get_incident_state

    table = p.stack.physical["IncidentStateTable"]
    rejected = Counter(body for body, reason in letters if reason)
    lost = 0
    for alert in alerts:
        if rejected[alert]:
            rejected[alert] -= 1
            continue
        try:
            incident_id = incident_for_alert(p.clients, table, parse_alert(alert))
        except MalformedAlertError:
            lost += 1
            continue
        lost += get_incident_state(p.clients, table, incident_id) is None
    return lost


def seconds_to_end(states: list[dict[str, Any]]) -> float | None:
    """The first alert's detected_at -> the last recorded ended_at."""
    if not states or not all(s.get("ended_at") and s.get("detected_at") for s in states):
        return None
    stamp = datetime.fromisoformat
    start = min(stamp(s["detected_at"]) for s in states)
    return max((stamp(s["ended_at"]) - start).total_seconds() for s in states)


def summarize(p, row: Row, alerts: list[str], *, expected: int, about: list[str] | None = None) -> dict[str, Any]:
    """Fill the row's columns from the lab's end state; ``about``: the incidents the row reports (all by default)."""
    letters = drain_dead_letters(p)
    records = incidents(p)
    states = [records[i] for i in (about if about is not None else sorted(records)) if i in records]
    statuses = Counter(s.get("status", "?") for s in states)
    row.status = ", ".join(f"{n} x {s}" if n > 1 else s for s, n in statuses.items()) or "-"
    row.category = ", ".join(sorted({s["error_category"] for s in states if s.get("error_category")})) or "-"
    row.seconds = seconds_to_end(states)
    row.lost = count_lost(p, alerts, letters)
    row.duplicated = max(0, len(executions(p)) - expected, len(records) - expected)
    row.expect(row.lost == 0, f"{row.lost} alert(s) lost")
    row.expect(row.duplicated == 0, f"{row.duplicated} duplicated")
    row.expect(len(records) == expected, f"{len(records)} incident record(s), {expected} expected")
    return {"letters": letters, "records": records, "states": states}


def burst(p, scenario, invocations: int | None = None) -> list[str]:
    """The scenario's setup and faults, then one burst of the workload; the alert it published, if any."""
    if scenario.workload.setup is not None:
        p.set_up(scenario.workload.function, scenario.workload.setup)
    p.inject(scenario)
    result = p.workload(scenario.workload.function).invoke(
        invocations or scenario.workload.invocations,
        log_lines=scenario.workload.log_lines,
        app_error=scenario.workload.app_error,
    )
    return [json.dumps(result.alert)] if result.alert else []


def timeout_scenario():
    from incident_responder.lab.scenario import Scenario

    return Scenario.model_validate(TIMEOUT_FAULT)


# -- models the agents get instead of the offline one -------------------------------------------------
def canned_model(answer: Any):
    """A chat model that gives ``answer`` (an AIMessage) every turn, or raises it (an exception)."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.outputs import ChatGeneration, ChatResult

    class CannedModel(BaseChatModel):
        answer: Any

        @property
        def _llm_type(self) -> str:
            return "fault-matrix"

        def bind_tools(self, tools: Any, **kwargs: Any) -> CannedModel:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
            if isinstance(self.answer, Exception):
                raise self.answer
            message = self.answer.model_copy(deep=True)
            message.usage_metadata = {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}
            return ChatResult(generations=[ChatGeneration(message=message)])

    return CannedModel(answer=answer)


@contextlib.contextmanager
def agents_model(model: Any) -> Iterator[None]:
    """The deployed handlers run in this process and build their model on every invocation with
    ``models.create_chat_model`` (settings.chat_model): replacing it gives them ``model``, nothing else changes."""
    from incident_responder.agent import models

    original = models.create_chat_model
    models.create_chat_model = lambda *args, **kwargs: model
    try:
        yield
    finally:
        models.create_chat_model = original


def invocations(p, logical_id: str) -> int:
    return p.dispatcher.functions[p.stack.functions[logical_id]].invocations


# -- the diagnostics MCP server's function-URL process ------------------------------------------------
def function_url_pid(port: int) -> int:
    """The pid of this process's child serving the lab function URL on ``port``."""
    listing = subprocess.run(["ps", "-A", "-o", "pid=,ppid=,args="], capture_output=True, text=True, check=True)
    for line in listing.stdout.splitlines():
        pid, ppid, args = line.split(None, 2)
        if int(ppid) == os.getpid() and "incident_responder.lab.function_url" in args and f"--port {port} " in args:
            return int(pid)
    raise RuntimeError(f"no function-URL process of ours on port {port}")


def port_closed(port: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        except OSError:
            return True
        time.sleep(0.05)
    return False


def restart_diagnostics_url(p) -> subprocess.Popen:
    """The diagnostics function URL again, on its port, as LabPipeline.start runs it."""
    from incident_responder.lab.function_url import start_function_url
    from incident_responder.lab.pipeline.startup import _process_base_env  # the same environment the pipeline gives
    from incident_responder.lab.template import function_urls

    (url,) = [u for u in function_urls() if u.url_id == "DiagnosticsMcpFunctionUrl"]
    name = p.stack.physical[url.function_id]
    function = p.dispatcher.functions[name]
    return start_function_url(
        url.handler,
        name,
        urlsplit(p.mcp_url).port,
        {**_process_base_env(), **p.lab.env, **function.environment},
        auth_type=url.auth_type,
        timeout=function.timeout_seconds,
    )


def stop_process(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# -- the cases ------------------------------------------------------------------------------------------
def happy_path(p) -> Row:
    from incident_responder.lab.scenario import load_scenario

    row = Row(1, "happy path (timeout-too-low)")
    alerts = burst(p, load_scenario(REPO / "scenarios" / "timeout-too-low.yaml"))
    ends = settle(p)
    summarize(p, row, alerts, expected=1)
    row.expect(row.status == "PROPOSAL_READY", "not PROPOSAL_READY")
    row.expect(list(ends.values()) == ["SUCCEEDED"], f"execution {ends}")
    return row


def diagnostics_server_killed(p, cleanup: contextlib.ExitStack) -> Row:
    from incident_responder.lab.moto_patches.stepfunctions import instant_retries

    row = Row(2, "diagnostics MCP server killed")
    port = urlsplit(p.mcp_url).port
    os.kill(function_url_pid(port), signal.SIGKILL)
    row.expect(port_closed(port), "the diagnostics function URL still answers")
    before = invocations(p, "InvestigateFunction")
    try:
        with instant_retries() as delays:
            alerts = burst(p, timeout_scenario())
            ends = settle(p)
    finally:
        cleanup.callback(stop_process, restart_diagnostics_url(p))  # the next cases need it
    attempts = invocations(p, "InvestigateFunction") - before
    summarize(p, row, alerts, expected=1)
    row.expect((row.status, row.category) == ("ERROR", "mcp_connection"), "not ERROR mcp_connection")
    row.expect(attempts == 6, f"{attempts} attempts, 6 expected")
    row.expect(list(ends.values()) == ["FAILED"], f"execution {ends}")
    row.seconds_aside = f" (+{sum(delays):.1f} backoff skipped)"
    row.note = (
        f"{attempts} attempts of investigate (1 + 5 retries), each refused at connect. Run under "
        f"`incident_responder.lab.moto_patches.stepfunctions.instant_retries()`: the ASL's full-jitter backoff asked for {len(delays)} "
        f"waits ({', '.join(f'{d:.1f}' for d in delays)} s; caps 3, 6, 12, 24, 48 s), which the time leaves out. "
        "Deployed, the waits are drawn anew each time: up to 93 s in all, 46.5 s on average."
    )
    return row


def model_denied(p) -> Row:
    from botocore.exceptions import ClientError

    row = Row(3, "model access denied")
    denied = ClientError(
        {
            "Error": {
                "Code": "AccessDeniedException",
                "Message": "You don't have access to the model with the specified model ID.",
            }
        },
        "Converse",
    )
    before = invocations(p, "InvestigateFunction")
    with agents_model(canned_model(denied)):
        alerts = burst(p, timeout_scenario())
        ends = settle(p)
    attempts = invocations(p, "InvestigateFunction") - before
    summarize(p, row, alerts, expected=1)
    row.expect((row.status, row.category) == ("ERROR", "model_auth"), "not ERROR model_auth")
    row.expect(attempts == 1, f"{attempts} attempts, 1 expected (auth errors are never retried)")
    row.expect(list(ends.values()) == ["FAILED"], f"execution {ends}")
    row.note = (
        f"{attempts} attempt. The model raises botocore ClientError AccessDeniedException (Converse) on its first "
        "call, injected into the deployed investigate handler (see the model note)."
    )
    return row


def no_tool_called(p) -> Row:
    from langchain_core.messages import AIMessage

    from incident_responder.agent.protocol import SUBMIT_DIAGNOSIS

    row = Row(4, "investigation calls no tool")
    diagnosis = {
        "root_cause": "The function's timeout is lower than its work takes.",
        "fault_types": ["timeout"],
        "affected_resources": ["data-processor"],
        "severity": "high",
        "confidence": "high",
        "evidence": [
            {"tool": "get_lambda_config", "field": "Timeout", "value": "1", "interpretation": "1 s is too short"}
        ],
        "remediation_plan": [],
        "investigation_gaps": [],
    }
    at_once = AIMessage(
        content="", tool_calls=[{"name": SUBMIT_DIAGNOSIS, "args": diagnosis, "id": "c0", "type": "tool_call"}]
    )
    proposals = invocations(p, "ProposeFunction")
    with agents_model(canned_model(at_once)):
        alerts = burst(p, timeout_scenario())
        ends = settle(p)
    summarize(p, row, alerts, expected=1)
    row.expect((row.status, row.category) == ("FAILED", "no_evidence"), "not FAILED no_evidence")
    row.expect(invocations(p, "ProposeFunction") == proposals, "the proposer ran on an unverified diagnosis")
    row.expect(list(ends.values()) == ["FAILED"], f"execution {ends}")
    row.note = (
        f"The model submits {SUBMIT_DIAGNOSIS} on its first turn, citing get_lambda_config it never called; "
        "injected into the deployed investigate handler (see the model note). The proposer never ran."
    )
    return row


def throttled_without_reservation(p) -> Row:
    from incident_responder.lab.scenario import load_scenario
    from incident_responder.state.store import load_record

    row = Row(5, "throttled, no reservation at onboarding")
    alerts = burst(p, load_scenario(REPO / "scenarios" / "throttled-without-reservation.yaml"))
    settle(p)
    found = summarize(p, row, alerts, expected=1)
    state = found["states"][0] if found["states"] else {}
    stored = load_record(p.clients, p.stack.physical["IncidentContextTable"], state.get("incident_id", "-"), "proposal")
    proposal = (stored or {}).get("summary", {})
    actions = (proposal.get("proposal") or {}).get("actions", [])
    rejected = (proposal.get("proposal") or {}).get("rejected_actions", [])
    concurrency = [a["parameters"] for a in actions if a["action_type"] == "update_concurrency"]
    row.expect(row.status == "PROPOSAL_READY", "not PROPOSAL_READY")
    row.expect(
        len(concurrency) == 1 and concurrency[0].get("reserved_concurrent_executions", 0) is None,
        f"update_concurrency: {concurrency}",
    )
    row.expect(rejected == [] and state.get("rejected_actions") == 0, f"rejected: {rejected}")
    row.note = (
        f"Proposed: {', '.join(a['action_type'] for a in actions) or 'nothing'}; update_concurrency "
        f"{json.dumps(concurrency[0] if concurrency else None)} (delete the reservation chaos added); "
        f"{len(rejected)} rejected."
    )
    return row


def ten_copies(p) -> Row:
    row = Row(6, "10 copies of one alert")
    p.inject(timeout_scenario())
    alert = p.workload().invoke(1).alert
    alerts = [json.dumps(alert)] * 10
    publish(p, alerts[1:])  # the burst published it once; SNS delivers at least once
    ingested = invocations(p, "IngestFunction")
    ends = settle(p)
    summarize(p, row, alerts, expected=1)
    row.expect(len(ends) == 1, f"{len(ends)} executions")
    row.expect(row.status == "PROPOSAL_READY", "not PROPOSAL_READY")
    row.note = f"{ingested} ingest invocations, {len(ends)} execution, 1 incident."
    return row


def alarm_storm(p) -> Row:
    from incident_responder.account.baseline import record_baseline
    from incident_responder.lab.account.data_processor import create_sample_account

    row = Row(7, "alarm storm: 50 x one alarm + another function")
    p.inject(timeout_scenario())
    alarm = p.workload().invoke(1).alert
    fired = datetime.fromisoformat(alarm["StateChangeTime"]).timestamp()
    refired = [
        {**alarm, "StateChangeTime": datetime.fromtimestamp(fired - i, UTC).strftime("%Y-%m-%dT%H:%M:%S.000+0000")}
        for i in range(1, 50)
    ]
    alerts = [json.dumps(alarm)] + [json.dumps(a) for a in refired]
    publish(p, alerts[1:])
    other = create_sample_account(p.clients, function_name="orders-worker", responder_resources=False)
    record_baseline(p.clients, other.function_name)
    second = p.workload(other.function_name).invoke(2, app_error="KeyError: 'order_id'").alert
    alerts.append(json.dumps(second))
    ends = settle(p)
    found = summarize(p, row, alerts, expected=2)
    row.expect(sorted(s["function_name"] for s in found["states"]) == ["data-processor", "orders-worker"], "functions")
    row.expect(set(ends.values()) == {"SUCCEEDED"}, f"executions {ends}")
    row.note = f"51 alerts -> {len(ends)} executions, {len(found['records'])} incidents (one per function)."
    return row


def malformed_alerts(p) -> Row:
    from incident_responder.lab.hostile_alerts import hostile_alerts

    row = Row(8, "100 malformed alerts")
    alerts = hostile_alerts()
    started = time.monotonic()
    publish(p, alerts)
    found = summarize(p, row, alerts, expected=0)
    row.seconds = time.monotonic() - started
    with_reason = sum(1 for _, reason in found["letters"] if reason)
    row.status = f"none: {with_reason} in the DLQ with a reason"
    row.expect(with_reason == 100, f"{with_reason} dead letters with a reason")
    row.expect(executions(p) == [], "an execution started")
    row.note = (
        f"{invocations(p, 'IngestFunction')} ingest invocations (no crash, so no Lambda retry), 0 executions, "
        "no budget spent. Time: publishing the first -> the last dead letter read back, by the clock."
    )
    return row


def circuit_breaker(p) -> Row:
    from incident_responder.intake.alerts import parse_alert

    row = Row(9, "breaker: 3rd incident in the hour, budget 2")
    first = [project_alert("BreakerA"), project_alert("BreakerB")]
    publish(p, first)
    for alert in first:  # both past the budget states before the third arrives: the third is the one refused
        wait_for_status(p, parse_alert(alert).incident_id, lambda s: s not in ("", "RECEIVED"))
    third = project_alert("BreakerC")
    publish(p, [third])
    refused = parse_alert(third).incident_id
    ends = settle(p)
    found = summarize(p, row, [*first, third], expected=3, about=[refused])
    others = [found["records"][parse_alert(a).incident_id].get("status") for a in first]
    row.expect((row.status, row.category) == ("SUPPRESSED", "circuit_breaker"), "not SUPPRESSED circuit_breaker")
    row.expect(ends.get(refused) == "SUCCEEDED", f"suppressed execution {ends.get(refused)}")
    row.expect("SUPPRESSED" not in others, f"the first two: {others}")
    state = found["states"][0] if found["states"] else {}
    stamp = datetime.fromisoformat
    waited = (stamp(state["created_at"]) - stamp(state["detected_at"])).total_seconds() if state else 0.0
    row.note = (
        f"MaxIncidentsPerFunctionPerHour=2 (given to LabPipeline.start; this case runs first). The row is the third "
        f"incident, alerted while the first two were investigating: execution {ends.get(refused)}, no model called. "
        f"{waited:.1f} s of its time passed before its execution started: the lab runs one handler at a time "
        "(the dispatcher's environment lock), so its ingest waited for the investigations. The first two "
        f"(distinct error types, healthy function, offline model): {', '.join(others)}."
    )
    return row


@contextlib.contextmanager
def held(p, function: str) -> Iterator[None]:
    """The stack function's task stays running (its handler waits in the dispatcher) until the block ends."""
    dispatched = p.dispatcher.functions[p.stack.functions[function]]
    handler, release = dispatched.handler, threading.Event()

    def wait(event: dict[str, Any], context: Any) -> dict[str, Any]:
        release.wait(CASE_TIMEOUT)
        return {}  # what it answers once released does not matter: its execution was stopped

    dispatched.handler = wait
    try:
        yield
    finally:
        release.set()
        dispatched.handler = handler


def stop(p, incident_id: str) -> str:
    """StopExecution on the incident's execution, as an operator (or the sweep) would; its ARN."""
    arn = f"{p.state_machine_arn.replace(':stateMachine:', ':execution:')}:{incident_id}"
    p.clients.get("stepfunctions").stop_execution(
        executionArn=arn, error="Operator", cause="fault matrix: stopped by hand"
    )
    return arn


def aborted_execution(p) -> Row:
    from incident_responder.intake.alerts import parse_alert

    row = Row(10, "execution aborted in INVESTIGATING")
    alert = project_alert("Aborted")
    incident_id = parse_alert(alert).incident_id
    with held(p, "InvestigateFunction"):
        publish(p, [alert])
        status = wait_for_status(p, incident_id, lambda s: s == "INVESTIGATING")
        arn = stop(p, incident_id)
    ends = settle(p)
    again = reconcile(p, arn, "ABORTED")
    found = summarize(p, row, [alert], expected=1)
    state = found["states"][0] if found["states"] else {}
    row.expect(status == "INVESTIGATING", f"stopped in {status}")
    row.expect((row.status, row.category) == ("FAILED", "execution_aborted"), "not FAILED execution_aborted")
    row.expect(bool(state.get("ended_at")), "no ended_at")
    row.expect(again == "already_terminal", f"a second reconcile: {again}")
    row.note = (
        f"Stopped with StopExecution while the investigate task was held in the dispatcher (status {status}); "
        f"execution {ends.get(incident_id)}; reconcile (the EventBridge rule's job) marked it FAILED with ended_at "
        f"{state.get('ended_at')}; a second reconcile: {again}."
    )
    return row


# -- the closed loop under attack (RemediationMode=closed_loop, the most permissive approval settings) --------
CLOSED_LOOP = {"RemediationMode": "closed_loop", "AutoApprove": "low", "AutoApproveIamAndNetwork": "true"}


def function_config(p, function: str = "data-processor") -> dict[str, Any]:
    return p.clients.get("lambda").get_function_configuration(FunctionName=function)


def end_row(row: Row, record: Any) -> None:
    row.status, row.category = record.status, record.error_category or "-"
    row.seconds = seconds_to_end([record.timings])


def overlapping_incidents(p) -> Row:
    """Another incident holds the lease of the function's configuration (it is applying or verifying its own change)
    when this one is approved: this one waits, then hands over to a person, and changes nothing."""
    from incident_responder.lab.moto_patches.stepfunctions import instant_retries
    from incident_responder.lab.scenario import load_scenario
    from incident_responder.remediation import lease as leases

    row = Row(11, "overlapping incidents on one function")
    table = p.stack.physical["IncidentStateTable"]
    leases.take(p.clients, table, "function:data-processor", "data-processor-other-incident")
    with instant_retries() as delays:
        record = p.run(load_scenario(REPO / "scenarios" / "timeout-too-low.yaml"))
    end_row(row, record)
    row.seconds_aside = f" (+{sum(delays):.0f} waits skipped)"
    visited = record.execution.get("states_visited", [])
    timeout = function_config(p)["Timeout"]
    row.expect((row.status, row.category) == ("ERROR", "resource_busy"), "not ERROR resource_busy")
    row.expect("Handed over" in visited, "no hand-over notification")
    row.expect(timeout == 1, f"the function was changed while another incident held it: Timeout {timeout}")
    held = (leases.holder(p.clients, table, "function:data-processor") or {}).get("holder")
    row.expect(held == "data-processor-other-incident", f"lease now held by {held}")
    row.note = (
        f"The lease of function:data-processor taken first by another incident id; this incident's approved timeout restore "
        f"asked {len(delays)} times more (waits {', '.join(f'{d:.0f}' for d in delays)} s, skipped with "
        "instant_retries: about 27 min deployed), then `Handed over` told a person and it ended ERROR/resource_busy. "
        f"Timeout still {timeout} s (the fault): nothing applied, the holder's lease untouched."
    )
    return row


def poisoned_baseline(p) -> Row:
    """A baseline recorded while the role had an Action * statement: a later IAM restore brings back what the
    fault removed, never the wildcard, even with every approval automatic."""
    from incident_responder.account.baseline import load_baseline, record_baseline
    from incident_responder.lab.scenario import load_scenario

    row = Row(12, "poisoned baseline (Action * at onboarding)")
    iam = p.clients.get("iam")
    role = function_config(p)["Role"].rsplit("/", 1)[-1]
    wildcard = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    iam.put_role_policy(RoleName=role, PolicyName="break-glass", PolicyDocument=json.dumps(wildcard))
    record_baseline(p.clients, "data-processor")
    refused = [e.path for e in load_baseline(p.clients, "data-processor").not_restorable]
    iam.delete_role_policy(RoleName=role, PolicyName="break-glass")  # gone since: a "drift" to restore
    record = p.run(load_scenario(REPO / "scenarios" / "s3-policy-revoked.yaml"))
    end_row(row, record)
    policies = iam.list_role_policies(RoleName=role)["PolicyNames"]
    applied = [
        f"{s.get('action_type')} {json.dumps(s.get('parameters', {}).get('policy_name'))}"
        for s in (record.proposal or {}).get("actions", [])
    ]
    row.expect("break-glass" not in policies, "the Action * policy was restored")
    row.expect(any("break-glass" in path for path in refused), f"not marked not restorable: {refused}")
    row.expect(row.status == "REMEDIATED", "not REMEDIATED (the s3-access restore)")
    row.note = (
        f"Onboarding marked {', '.join(refused)} not restorable. Proposed: {', '.join(applied) or 'nothing'}; the role "
        f"ends with {', '.join(sorted(policies))}: the wildcard policy never came back, with AutoApproveIamAndNetwork."
    )
    return row


def recurrence_after_the_end(p) -> Row:
    """The same alarm firing again seconds after its incident ended REMEDIATED starts a new incident."""
    from incident_responder.lab.scenario import load_scenario
    from incident_responder.state import keys

    row = Row(13, "recurrence seconds after REMEDIATED")
    scenario = load_scenario(REPO / "scenarios" / "timeout-too-low.yaml")
    alerts = burst(p, scenario)  # the alarm fires: SNS -> ingest -> the closed loop, every approval automatic
    settle(p)
    ((first_id, first),) = incidents(p).items()
    p.inject(scenario)  # the fault is back and the same alarm fires again, seconds later
    alarm = json.loads(alerts[0])
    publish(p, [json.dumps({**alarm, "StateChangeTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000+0000")})])
    ends = settle(p)
    records = incidents(p)
    second = [i for i in records if i != first_id]
    state = records[second[0]] if second else {}
    groups = p.clients.get("dynamodb").scan(TableName=p.stack.physical["IncidentStateTable"])["Items"]
    (group,) = [
        g for g in groups if g["incident_id"]["S"].startswith(f"{keys.GROUP_PREFIX}data-processor{keys.SEPARATOR}")
    ]
    recurrence_of = group.get("recurrence_of", {}).get("S")
    row.status = f"{first.get('status')}, then {state.get('status', '-')}"
    row.seconds = seconds_to_end([s for s in records.values() if s.get("ended_at")])
    row.expect(first.get("status") == "REMEDIATED", f"first: {first.get('status')}")
    row.expect(len(second) == 1 and recurrence_of == first_id, f"second: {second}, of {recurrence_of}")
    row.expect(state.get("status") == "REMEDIATED", f"second ended {state.get('status')}")
    row.expect(function_config(p)["Timeout"] != 1, "the function is left broken")
    row.note = (
        f"{first_id} REMEDIATED; the fault re-injected and the alarm fired again: {', '.join(second)} "
        f"started and took the alarm's group over (recurrence_of {recurrence_of}); executions {sorted(ends.values())}. Before the fix the alert joined the ended incident: nothing started."
    )
    return row


def edited_reject_link(p) -> Row:
    """The reject link with decision=approve: refused on the page and on the post; nothing is decided."""
    import httpx

    from incident_responder.lab import approver
    from incident_responder.lab.scenario import load_scenario

    row = Row(14, "reject link edited to approve")  # deployed with AutoApprove=none: a person decides
    scenario = load_scenario(REPO / "scenarios" / "timeout-too-low.yaml")
    # The lab's person does nothing more than the edit: the approval expires.
    scenario = scenario.model_copy(update={"lifecycle": scenario.lifecycle.model_copy(update={"approval": "none"})})
    seen: dict[str, int] = {}
    act = approver.act

    def tamper(clients: Any, inbox_url: str, incident_id: str, decision: str, **kwargs: Any) -> Any:
        """The lab's person, this once: edits the reject link to approve, posts it, and does nothing else."""
        request = approver.read_request(clients, inbox_url, incident_id)
        edited = request["links"]["reject"].replace("decision=reject", "decision=approve")
        with httpx.Client(timeout=30) as http:
            seen["page"] = http.get(edited).status_code
            seen["post"] = http.post(edited, data={}).status_code
        return approver.ApproverReport(decision="none", message_subject=request["subject"])

    approver.act = tamper
    try:
        record = p.run(scenario)
    finally:
        approver.act = act
    end_row(row, record)
    timeout = function_config(p)["Timeout"]
    row.expect(seen == {"page": 403, "post": 403}, f"edited link answered {seen}")
    row.expect(row.status == "APPROVAL_EXPIRED", "not APPROVAL_EXPIRED")
    row.expect(timeout == 1, f"changed: Timeout {timeout}")
    row.note = (
        f"The edited link: page {seen.get('page')}, post {seen.get('post')}. Nobody decided: the approval expired "
        f"(ApprovalTimeoutMinutes 0.1 in the lab); Timeout still {timeout} s."
    )
    return row


def other_account_arn(p) -> Row:
    """A proposer proposing the same function name in another account: refused by the guardrails, never applied."""
    from langchain_core.messages import AIMessage

    from incident_responder.agent.protocol import SUBMIT_PROPOSAL
    from incident_responder.lab.scenario import load_scenario

    row = Row(15, "target ARN in another account")
    region = p.clients.region
    foreign = f"arn:aws:lambda:{region}:999999999999:function:data-processor"
    submission = {
        "actions": [
            {
                "fault_type": "timeout",
                "action_type": "update_function_configuration",
                "target_resource": foreign,
                "parameters": {"function_name": "data-processor", "timeout": 30},
                "reasoning": "restore the timeout",
            }
        ],
        "confidence": "high",
    }
    hostile = canned_model(
        AIMessage(
            content="", tool_calls=[{"name": SUBMIT_PROPOSAL, "args": submission, "id": "p0", "type": "tool_call"}]
        )
    )
    propose = p.dispatcher.functions[p.stack.functions["ProposeFunction"]]
    handler = propose.handler

    def with_hostile_model(event: dict[str, Any], context: Any) -> Any:
        with agents_model(hostile):
            return handler(event, context)

    propose.handler = with_hostile_model
    try:
        record = p.run(load_scenario(REPO / "scenarios" / "timeout-too-low.yaml"))
    finally:
        propose.handler = handler
    end_row(row, record)
    rejected = (record.proposal or {}).get("rejected_actions", [])
    timeout = function_config(p)["Timeout"]
    reasons = [reason for r in rejected for reason in r.get("reasons", [])]
    row.expect(row.status in ("PROPOSAL_READY", "PROPOSAL_FAILED"), f"ended {row.status}")
    row.expect(timeout == 1, f"changed: Timeout {timeout}")
    row.expect(len(rejected) == 1 and not (record.proposal or {}).get("actions"), f"rejected: {rejected}")
    row.expect(any("999999999999" in r and "not this account" in r for r in reasons), f"reasons: {reasons}")
    row.note = (
        f"The proposer (a canned model in the deployed propose handler) submits update_function_configuration on "
        f"{foreign}. Guardrails: {'; '.join(reasons)[:200] or 'nothing rejected'}. Timeout still {timeout} s."
    )
    return row


# -- the run --------------------------------------------------------------------------------------------
def operator_inbox(p) -> Callable[[], list[dict[str, Any]]]:
    """The stack's operator topic, read through an SQS subscription made now."""
    sqs, sns = p.clients.get("sqs"), p.clients.get("sns")
    queue = sqs.create_queue(QueueName=f"fault-matrix-operators-{int(time.time() * 1000)}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=p.stack.output("OperatorTopicArn"), Protocol="sqs", Endpoint=arn)

    def read() -> list[dict[str, Any]]:
        got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
        return [json.loads(m["Body"]) for m in got]

    return read


def held_leases(p) -> list[str]:
    """Every lease item someone holds (lease#<resource>), by resource."""
    from incident_responder.state import keys

    items = p.clients.get("dynamodb").scan(TableName=p.stack.physical["IncidentStateTable"])["Items"]
    return [
        i["incident_id"]["S"].removeprefix(keys.LEASE_PREFIX)
        for i in items
        if i["incident_id"]["S"].startswith(keys.LEASE_PREFIX) and "holder" in i
    ]


def stopped_while_verifying(p) -> Row:
    """StopExecution while the fix is applied and not yet verified: the change is handed over to a person (operator
    alarm with the ledger), its leases are released, and nothing is left silently unverified."""
    from incident_responder.lab.scenario import load_scenario

    row = Row(16, "execution stopped while VERIFYING")
    inbox = operator_inbox(p)
    with held(p, "VerifyFunction"):
        alerts = burst(p, load_scenario(REPO / "scenarios" / "timeout-too-low.yaml"))
        ((incident_id, _),) = [(i, s) for i, s in _wait_for_incident(p).items()]
        status = wait_for_status(p, incident_id, lambda s: s == "VERIFYING")
        held_then = held_leases(p)
        stop(p, incident_id)
    ends = settle(p)
    found = summarize(p, row, alerts, expected=1)
    alarms = [m for m in inbox() if m["Subject"].startswith("UNVERIFIED CHANGE")]
    timeout = function_config(p)["Timeout"]
    row.expect(status == "VERIFYING", f"stopped in {status}")
    row.expect((row.status, row.category) == ("REMEDIATION_FAILED", "execution_aborted"), "not REMEDIATION_FAILED")
    row.expect(len(alarms) == 1, f"{len(alarms)} operator alarm(s) about the unverified change")
    row.expect(bool(alarms) and "update_function_configuration" in alarms[0]["Message"], "the alarm names no step")
    row.expect(held_then == ["function:data-processor"] and held_leases(p) == [], f"leases: {held_leases(p)}")
    row.note = (
        f"Stopped with StopExecution while the verify task was held (status {status}); execution "
        f"{ends.get(incident_id)}; reconcile marked it {row.status}/{row.category}, released the lease it held "
        f"({', '.join(held_then)}) and put {len(alarms)} 'UNVERIFIED CHANGE' alarm on the operator topic listing "
        f"each applied step with its prior state and fencing token. The change stays as applied (Timeout "
        f"{timeout} s) for a person: `responder rollback` undoes it, fenced. Before: no alarm, the lease held. "
        f"{len(found['states'])} incident."
    )
    return row


def _wait_for_incident(p, timeout: float = CASE_TIMEOUT) -> dict[str, dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while not (found := incidents(p)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def fixed_by_another_while_waiting(p) -> Row:
    """Another incident holds the function and fixes the fault while this one waits for it: this one finds its
    step already restored, verifies and ends REMEDIATED (it ended ROLLED_BACK with an empty ledger, paging a
    person about a function already fixed)."""
    from incident_responder.lab.moto_patches.stepfunctions import instant_retries
    from incident_responder.lab.scenario import load_scenario
    from incident_responder.remediation import lease as leases
    from incident_responder.remediation.errors import ResourceLeaseHeldError

    row = Row(17, "fixed by another incident while waiting")
    table = p.stack.physical["IncidentStateTable"]
    other, resource = "data-processor-other-incident", "function:data-processor"
    leases.take(p.clients, table, resource, other)
    remediate = p.dispatcher.functions[p.stack.functions["RemediateFunction"]]
    handler, waits = remediate.handler, []

    def other_finishes(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            return handler(event, context)
        except ResourceLeaseHeldError:
            if not waits:  # the other incident restores the timeout, verifies and frees the function
                p.clients.get("lambda").update_function_configuration(FunctionName="data-processor", Timeout=30)
                leases.release(p.clients, table, resource, other)
            waits.append(event.get("operation"))
            raise

    remediate.handler = other_finishes
    inbox = operator_inbox(p)
    try:
        with instant_retries():
            record = p.run(load_scenario(REPO / "scenarios" / "timeout-too-low.yaml"))
    finally:
        remediate.handler = handler
    end_row(row, record)
    state = incidents(p).get(record.incident_id or "", {})
    steps = [s.get("status") for s in (state.get("verification_json") or {}).get("checks", [])]
    news = [m for m in inbox() if m["Subject"].startswith("REMEDIATION FAILED")]
    row.expect(row.status == "REMEDIATED", f"ended {row.status}")
    row.expect(waits == ["apply"], f"waited {len(waits)} time(s)")
    row.expect(not news and held_leases(p) == [], f"alarms {len(news)}, leases {held_leases(p)}")
    row.note = (
        f"The lease of {resource} held by another incident id; this incident's apply waited once, meanwhile the "
        "other restored the timeout and gave the lease back; the retried apply found the step already restored "
        f"(nothing written), verification passed ({len(steps)} check(s)) and it ended {row.status}. Before: its "
        "step was refused as nothing to restore and it ended ROLLED_BACK, paging a person."
    )
    return row


def markdown(rows: list[Row]) -> str:
    lines = [
        "| case | terminal status | error_category | time (s, alert -> terminal) | lost | duplicated |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in sorted(rows, key=lambda r: r.number):
        seconds = ("-" if row.seconds is None else f"{row.seconds:.1f}") + row.seconds_aside
        lines.append(
            f"| {row.number}. {row.case} | {row.status} | {row.category} | {seconds} | {row.lost} | {row.duplicated} |"
        )
    lines.append("")
    lines += [f"{row.number}. {row.note}" for row in sorted(rows, key=lambda r: r.number) if row.note]
    lines.append(
        "Model note: cases 3, 4 and 15 replace the model, not the path: the deployed investigate (propose, in 15) "
        "handler runs in the lab process (the dispatcher) and builds its model with `models.create_chat_model` on "
        "every invocation; the script swaps that function for the duration of the case. All other cases use the "
        "offline model."
    )
    return "\n".join(lines)


def quiet() -> None:
    """The handlers' JSON logs and the lab's known warnings (template parts moto skips) would bury the progress."""
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "CRITICAL")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    logging.getLogger("samtranslator.metrics.metrics").setLevel(logging.ERROR)
    logging.getLogger("moto").addFilter(lambda record: "No Moto CloudFormation support" not in record.getMessage())
    warnings.filterwarnings("ignore", category=UserWarning, module=r"moto\.cloudformation")
    warnings.filterwarnings("ignore", message="No application metrics to publish")


def main() -> int:
    quiet()
    from incident_responder.lab.pipeline.startup import LabPipeline

    started = time.monotonic()
    rows: list[Row] = []
    with open(os.devnull, "w") as devnull, contextlib.ExitStack() as cleanup:
        cleanup.enter_context(contextlib.redirect_stdout(devnull))  # what handlers print (EMF metrics): not the table
        # The matrix is about reaching PROPOSAL_READY through failures; the closed loop has its own scenarios.
        p = cleanup.enter_context(
            LabPipeline.start(
                parameters={"MaxIncidentsPerFunctionPerHour": "2", "RemediationMode": "propose_only"}, workers=False
            )
        )
        print(f"lab up in {time.monotonic() - started:.1f} s", file=sys.stderr)
        cases: list[tuple[int, Callable[[Any], Row]]] = [
            (9, circuit_breaker),  # first: refresh() redeploys with the template's default budget
            (1, happy_path),
            (2, functools.partial(diagnostics_server_killed, cleanup=cleanup)),
            (3, model_denied),
            (4, no_tool_called),
            (5, throttled_without_reservation),
            (6, ten_copies),
            (7, alarm_storm),
            (8, malformed_alerts),
            (10, aborted_execution),
            (11, overlapping_incidents),
            (12, poisoned_baseline),
            (13, recurrence_after_the_end),
            (14, edited_reject_link),
            (15, other_account_arn),
            (16, stopped_while_verifying),
            (17, fixed_by_another_while_waiting),
        ]
        # Stack parameters a case changes, from its refresh on: the closed loop with every approval automatic from
        # case 11, a person deciding in case 14 only.
        redeploy = {11: CLOSED_LOOP, 14: {"AutoApprove": "none"}, 15: {"AutoApprove": "low"}, 16: CLOSED_LOOP}
        for i, (number, case) in enumerate(cases):
            if i:
                p.refresh(parameters=redeploy.get(number))
            began = time.monotonic()
            try:
                row = case(p)
            except Exception as exc:  # noqa: BLE001 - one broken case must not hide the others' rows
                name = getattr(getattr(case, "func", case), "__name__", "?")
                row = Row(number, name, status=f"crashed: {type(exc).__name__}")
                row.problems.append(f"{type(exc).__name__}: {exc}")
                with contextlib.suppress(Exception):
                    settle(p)  # nothing left running into the next case's fresh lab
            rows.append(row)
            verdict = "as designed" if not row.problems else "; ".join(row.problems)
            print(f"case {number}: {time.monotonic() - began:.1f} s, {verdict}", file=sys.stderr)
    print(markdown(rows))
    print(f"\nTotal wall time: {time.monotonic() - started:.0f} s (lab start and refreshes included).")
    failed = [row for row in rows if row.problems]
    for row in failed:
        print(f"NOT AS DESIGNED: case {row.number}: {'; '.join(row.problems)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
