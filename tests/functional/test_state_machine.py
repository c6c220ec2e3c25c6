"""The real ASL on the local engine: lifecycle paths, asserted on execution history and DynamoDB."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from incident_responder.intake.alerts import parse_alert
from incident_responder.lab.engine import wait_for_execution
from incident_responder.lab.moto_patches.stepfunctions import instant_retries
from incident_responder.reporting.report import collect, render_html
from incident_responder.state import keys
from incident_responder.state.lifecycle import (
    execution_input,
    execution_path,
    get_incident_state,
    history,
    reconcile_execution,
)
from tests.conftest import CONTEXT_TABLE, STATE_TABLE
from tests.lifecycle_paths import HAPPY, SUMMARY, diagnosed, proposed, start
from tests.report_checks import assert_report

ASL = Path(__file__).parents[2] / "statemachine" / "incident_lifecycle.asl.json"


class McpConnectionError(Exception):
    pass


class ModelAuthError(Exception):
    pass


def test_happy_path(clients, lifecycle, dispatcher):
    dispatcher.register("investigate", diagnosed)
    dispatcher.register("propose", proposed)
    sqs = clients.get("sqs")
    queue = sqs.create_queue(QueueName="operator")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    topic = clients.get("sns").create_topic(Name="incident-news")["TopicArn"]
    clients.get("sns").subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    incident, execution = start(clients, lifecycle())
    assert execution["status"] == "SUCCEEDED"
    assert execution_path(clients.get("stepfunctions"), execution["executionArn"]) == HAPPY
    state = get_incident_state(clients, STATE_TABLE, incident.incident_id)
    assert state["status"] == "PROPOSAL_READY"
    assert (state["proposed_actions"], state["rejected_actions"]) == (1, 0)
    # The notification is the one the propose function built from typed fields, published as it is.
    note = json.loads(sqs.receive_message(QueueUrl=queue)["Messages"][0]["Body"])
    assert note["Subject"] == "Remediation proposed: data-processor (permission_loss)"
    assert note["Message"].startswith(f"Incident {incident.incident_id} on function data-processor.")
    assert (state["root_cause"], state["severity"]) == (SUMMARY["root_cause"], "high")
    assert state["fault_types"] == [{"S": "permission_loss"}]
    assert state["execution_arn"] == execution["executionArn"]
    assert state["expires_at"] > time.time() + 6 * 86400
    for stamp in ("received_at", "investigating_at", "diagnosed_at", "proposing_at", "proposal_ready_at"):
        assert stamp in state


def test_a_diagnosis_travelling_by_reference_is_still_recorded(clients, lifecycle, dispatcher):
    """Too large for the state, the diagnosis stays in S3; DIAGNOSED records its always-inline summary."""

    def by_reference(event, context):
        return {**diagnosed(event, context), "diagnosis": None, "diagnosis_ref": "s3://bucket/incidents/x/i.json"}

    dispatcher.register("investigate", by_reference)
    dispatcher.register("propose", proposed)
    incident, execution = start(clients, lifecycle())
    assert execution["status"] == "SUCCEEDED"
    state = get_incident_state(clients, STATE_TABLE, incident.incident_id)
    assert (state["status"], state["fault_types"]) == ("PROPOSAL_READY", [{"S": "permission_loss"}])
    assert state["diagnosis_ref"] == "s3://bucket/incidents/x/i.json"


def test_mcp_connection_error_once_then_success(clients, lifecycle, dispatcher):
    calls = []

    def flaky(event, context):
        calls.append(1)
        if len(calls) == 1:
            raise McpConnectionError("MCP server 'diagnostics' unreachable: ConnectError")
        return diagnosed(event, context)

    dispatcher.register("investigate", flaky)
    dispatcher.register("propose", proposed)
    with instant_retries() as delays:
        incident, execution = start(clients, lifecycle())
    assert execution["status"] == "SUCCEEDED" and len(calls) == 2
    assert len(delays) == 1 and 0 <= delays[0] <= 3  # full jitter: anywhere up to the first interval
    failed = [e for e in history(clients.get("stepfunctions"), execution["executionArn"]) if e["type"] == "TaskFailed"]
    assert [e["taskFailedEventDetails"]["error"] for e in failed] == ["McpConnectionError"]
    assert get_incident_state(clients, STATE_TABLE, incident.incident_id)["status"] == "PROPOSAL_READY"


def test_model_auth_error_goes_to_error_without_retry(clients, lifecycle, dispatcher):
    calls = []

    def denied(event, context):
        calls.append(1)
        raise ModelAuthError("AccessDeniedException: not authorized to invoke model " + "x" * 900)

    dispatcher.register("investigate", denied)
    incident, execution = start(clients, lifecycle())
    assert execution["status"] == "FAILED" and len(calls) == 1
    assert execution_path(clients.get("stepfunctions"), execution["executionArn"])[-2:] == ["ERROR", "Incident error"]
    state = get_incident_state(clients, STATE_TABLE, incident.incident_id)
    assert (state["status"], state["error_category"]) == ("ERROR", "model_auth")
    assert state["error_reason"].startswith("ModelAuthError: AccessDeniedException")
    assert len(state["error_reason"]) == 500


def test_task_timeout_is_retried_then_failed(clients, lifecycle, dispatcher):
    calls = []

    def slow(event, context):
        calls.append(1)
        time.sleep(1.5)
        return diagnosed(event, context)

    dispatcher.register("investigate", slow)
    with instant_retries():
        incident, execution = start(clients, lifecycle(InvestigateTimeoutSeconds=1))
    assert execution["status"] == "FAILED" and len(calls) == 2
    state = get_incident_state(clients, STATE_TABLE, incident.incident_id)
    assert (state["status"], state["error_category"]) == ("FAILED", "timeout")
    assert state["error_reason"].startswith("States.Timeout")


def test_no_diagnosis_fails_with_the_reason(clients, lifecycle, dispatcher):
    dispatcher.register(
        "investigate",
        lambda event, context: {
            "outcome": "NO_DIAGNOSIS",
            "end_reason": "recursion_limit: 12 model turns without submit_diagnosis",
            "metrics": {},
        },
    )
    incident, execution = start(clients, lifecycle())
    state = get_incident_state(clients, STATE_TABLE, incident.incident_id)
    assert (state["status"], state["error_category"]) == ("FAILED", "no_diagnosis")
    assert state["error_reason"] == "no diagnosis: recursion_limit: 12 model turns without submit_diagnosis"
    assert execution["status"] == "FAILED" and execution["error"] == "no_diagnosis"
    assert_report(
        render_html(collect(clients, incident.incident_id, state_table=STATE_TABLE, context_table=CONTEXT_TABLE)),
        "FAILED",
    )


def test_a_diagnosis_without_verified_evidence_fails_and_proposes_nothing(clients, lifecycle, dispatcher):
    proposals = []
    dispatcher.register(
        "investigate",
        lambda event, context: {
            **diagnosed(event, context),
            "outcome": "NO_EVIDENCE",
            "end_reason": "the diagnosis (unknown) cites no verified tool output (0 tool call(s), 0 evidence pointer(s))",
        },
    )
    dispatcher.register("propose", lambda event, context: proposals.append(1) or proposed(event, context))
    incident, execution = start(clients, lifecycle())
    state = get_incident_state(clients, STATE_TABLE, incident.incident_id)
    assert (state["status"], state["error_category"]) == ("FAILED", "no_evidence")
    assert state["error_reason"].startswith("no evidence: the diagnosis (unknown) cites no verified tool output")
    assert execution["status"] == "FAILED" and proposals == []


def test_circuit_breaker_suppresses_per_function_and_per_account_before_any_model_call(clients, lifecycle, dispatcher):
    calls = []
    dispatcher.register("investigate", lambda event, context: calls.append(1) or diagnosed(event, context))
    dispatcher.register("propose", proposed)
    machine = lifecycle(MaxIncidentsPerHour=3, MaxIncidentsPerFunctionPerHour=2)

    def outcome(function, second):
        incident, execution = start(clients, machine, function=function, at=f"2026-11-23T04:00:{second:02}Z")
        return get_incident_state(clients, STATE_TABLE, incident.incident_id), execution

    runs = [outcome("data-processor", i) for i in range(4)]
    assert [state["status"] for state, _ in runs] == ["PROPOSAL_READY", "PROPOSAL_READY", "SUPPRESSED", "SUPPRESSED"]
    suppressed, execution = runs[2]
    assert suppressed["error_category"] == "circuit_breaker" and "no model was called" in suppressed["error_reason"]
    assert_report(
        render_html(collect(clients, suppressed["incident_id"], state_table=STATE_TABLE, context_table=CONTEXT_TABLE)),
        "SUPPRESSED",
    )
    assert "data-processor already had 2 incidents this hour" in suppressed["error_reason"]
    assert suppressed["ended_at"] == suppressed["updated_at"]
    # Recorded, not failed: a storm raises no failure alarm.
    assert execution["status"] == "SUCCEEDED" and execution_path(
        clients.get("stepfunctions"), execution["executionArn"]
    )[-2:] == ["SUPPRESSED", "Suppressed"]
    # Another function still gets investigated while data-processor is over its budget.
    assert outcome("orders", 10)[0]["status"] == "PROPOSAL_READY"
    # The account's budget (3) is now spent: a third function is suppressed, and its own budget given back.
    assert outcome("billing", 11)[0]["error_reason"].startswith("circuit breaker: the account already had 3")
    assert len(calls) == 3
    counters = {}
    for item in clients.get("dynamodb").scan(TableName=STATE_TABLE)["Items"]:
        key = item["incident_id"]["S"]
        if key.startswith(keys.RATE_PREFIX):
            window = key.removeprefix(keys.RATE_PREFIX).split(keys.SEPARATOR)
            counters[window[0] if len(window) == 2 else "account"] = int(item["incident_count"]["N"])
    # Refused incidents are not counted.
    assert counters == {"data-processor": 2, "orders": 1, "billing": 0, "account": 3}


@pytest.mark.parametrize(
    "operation, code",
    [
        ("PutItem", "ProvisionedThroughputExceededException"),  # RECEIVED
        ("UpdateItem", "ThrottlingException"),  # the budgets, then every status
    ],
)
def test_a_throttled_state_write_is_retried_not_the_end_of_the_incident(
    clients, lab, lifecycle, dispatcher, operation, code
):
    """A throttled write changed nothing, so the state writes it again. The first three states had no Catch
    but the breaker's: one throttle there ended the execution FAILED, before any record or notification."""
    dispatcher.register("investigate", diagnosed)
    dispatcher.register("propose", proposed)
    machine = lifecycle()
    lab.fail_requests(operation, service="dynamodb", code=code, times=2)
    try:
        with instant_retries() as delays:
            incident, execution = start(clients, machine)
    finally:
        lab.clear_failures()
    assert execution["status"] == "SUCCEEDED", (execution.get("error"), execution.get("cause"))
    assert execution_path(clients.get("stepfunctions"), execution["executionArn"]) == HAPPY
    assert get_incident_state(clients, STATE_TABLE, incident.incident_id)["status"] == "PROPOSAL_READY"
    assert len(delays) == 2 and all(0 <= d <= 2 for d in delays), delays  # jittered, from one second


def test_a_replayed_start_records_nothing_new(clients, lifecycle, dispatcher):
    dispatcher.register("investigate", diagnosed)
    dispatcher.register("propose", proposed)
    machine = lifecycle()
    incident, _ = start(clients, machine)
    sfn = clients.get("stepfunctions")
    # Same incident id, a different execution name: the RECEIVED condition stops it at once.
    arn = sfn.start_execution(stateMachineArn=machine, name="replay-1", input=json.dumps(execution_input(incident)))[
        "executionArn"
    ]
    assert wait_for_execution(sfn, arn)["status"] == "SUCCEEDED"
    assert execution_path(sfn, arn) == ["RECEIVED", "Already recorded"]
    assert get_incident_state(clients, STATE_TABLE, incident.incident_id)["status"] == "PROPOSAL_READY"


def start_stuck_in_investigating(clients, lifecycle, dispatcher, error_type: str):
    """An execution whose investigate handler hangs until ``release`` is appended to; returns once INVESTIGATING."""
    release: list[bool] = []

    def hangs(event, context):
        while not release:
            time.sleep(0.05)
        return diagnosed(event, context)

    dispatcher.register("investigate", hangs)
    machine = lifecycle()
    incident = parse_alert(
        {"function_name": "data-processor", "detected_at": "2026-11-23T04:00:00Z", "error_type": error_type}
    )
    sfn = clients.get("stepfunctions")
    arn = sfn.start_execution(
        stateMachineArn=machine, name=incident.incident_id, input=json.dumps(execution_input(incident))
    )["executionArn"]
    # However long a loaded machine takes to get there (a fixed number of tries once stopped it earlier, FAILED).
    deadline = time.monotonic() + 120
    while (get_incident_state(clients, STATE_TABLE, incident.incident_id) or {}).get("status") != "INVESTIGATING":
        assert time.monotonic() < deadline, "the execution never reached INVESTIGATING"
        time.sleep(0.05)
    return incident, arn, release


def test_aborted_execution_is_reconciled_to_failed(clients, lifecycle, dispatcher):
    incident, arn, release = start_stuck_in_investigating(clients, lifecycle, dispatcher, "X")
    sfn = clients.get("stepfunctions")
    sfn.stop_execution(executionArn=arn, error="Operator", cause="stopped by hand")
    release.append(True)
    status = wait_for_execution(sfn, arn)["status"]
    assert status == "ABORTED"
    assert (
        get_incident_state(clients, STATE_TABLE, incident.incident_id)["status"] == "INVESTIGATING"
    )  # nothing recorded the abort
    assert reconcile_execution(clients, STATE_TABLE, arn, status) == "marked_failed"
    state = get_incident_state(clients, STATE_TABLE, incident.incident_id)
    assert (state["status"], state["error_category"]) == ("FAILED", "execution_aborted")
    assert state["ended_at"] == state["updated_at"]  # every terminal write says when the incident ended
    assert reconcile_execution(clients, STATE_TABLE, arn, status) == "already_terminal"


def test_sweep_stops_a_stuck_execution_and_marks_it_failed(clients, lifecycle, dispatcher):
    from incident_responder.state.lifecycle import sweep_stuck

    incident, arn, release = start_stuck_in_investigating(clients, lifecycle, dispatcher, "Y")
    assert sweep_stuck(clients, STATE_TABLE, older_than_minutes=30) == []  # not stuck yet
    done = sweep_stuck(clients, STATE_TABLE, older_than_minutes=0)
    release.append(True)
    assert done == [{"incident_id": incident.incident_id, "action": "marked_failed"}]
    assert wait_for_execution(clients.get("stepfunctions"), arn)["status"] == "ABORTED"
    state = get_incident_state(clients, STATE_TABLE, incident.incident_id)
    assert (state["status"], state["error_category"]) == ("FAILED", "execution_aborted")
    assert "swept" in state["error_reason"] and state["ended_at"] == state["updated_at"]
    assert reconcile_execution(clients, STATE_TABLE, arn, "ABORTED") == "already_terminal"


class McpInitError(Exception):
    pass


class McpAuthError(Exception):
    pass


class ModelTransientError(Exception):
    pass


@pytest.mark.parametrize(
    "error, attempts, status, category",
    [
        (McpAuthError("MCP server 'diagnostics' refused our credentials: HTTP 401"), 1, "ERROR", "mcp_auth"),
        (ModelAuthError("AccessDeniedException"), 1, "ERROR", "model_auth"),
        (McpInitError("MCP server 'diagnostics' failed to initialize"), 2, "ERROR", "mcp_init"),
        (McpConnectionError("MCP server 'diagnostics' unreachable"), 6, "ERROR", "mcp_connection"),
        (ModelTransientError("ThrottlingException"), 6, "ERROR", "model_unavailable"),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else None,
)
def test_transient_errors_are_retried_with_jittered_backoff_and_auth_never(
    clients, lifecycle, dispatcher, error, attempts, status, category
):
    calls = []
    dispatcher.register("investigate", lambda event, context: calls.append(1) or (_ for _ in ()).throw(error))
    with instant_retries() as delays:
        incident, execution = start(clients, lifecycle())
    assert len(calls) == attempts
    caps = [min(3 * 2**n, 60) for n in range(attempts - 1)]
    assert all(0 <= delay <= cap for delay, cap in zip(delays, caps, strict=True)), delays
    if attempts == 6:  # over a window of minutes, not one 2-second retry
        assert sum(caps) >= 90
    state = get_incident_state(clients, STATE_TABLE, incident.incident_id)
    assert (state["status"], state["error_category"]) == (status, category)
    assert state["error_reason"].startswith(type(error).__name__)


@pytest.mark.parametrize(
    "proposer, category",
    [
        (
            lambda event, context: (_ for _ in ()).throw(
                McpAuthError("remediation server refused our credentials: HTTP 401")
            ),
            "mcp_auth",
        ),
        (
            lambda event, context: {
                "outcome": "NO_PROPOSAL",
                "end_reason": "recursion_limit: 8 model turns",
                "metrics": {},
            },
            "no_proposal",
        ),
        (lambda event, context: time.sleep(1.5) or proposed(event, context), "timeout"),
    ],
    ids=["proposer-error", "no-proposal", "proposer-timeout"],
)
def test_proposal_failures_end_in_proposal_failed(clients, lifecycle, dispatcher, proposer, category):
    dispatcher.register("investigate", diagnosed)
    dispatcher.register("propose", proposer)
    with instant_retries():
        incident, execution = start(clients, lifecycle(ProposeTimeoutSeconds=1))
    assert execution["status"] == "FAILED"
    assert execution_path(clients.get("stepfunctions"), execution["executionArn"])[-2:] == [
        "PROPOSAL_FAILED",
        "Proposal failed",
    ]
    state = get_incident_state(clients, STATE_TABLE, incident.incident_id)
    assert (state["status"], state["error_category"]) == ("PROPOSAL_FAILED", category)
    assert "diagnosed_at" in state  # the diagnosis stays recorded
