"""The real ASL's closed loop on the local engine: every path after PROPOSAL_READY, with scripted functions.

REVIEWING -> AWAITING_APPROVAL (a real .waitForTaskToken task answered with SendTaskSuccess / Failure) ->
REMEDIATING -> VERIFYING -> REMEDIATED, and REJECTED, APPROVAL_EXPIRED, ROLLED_BACK, REMEDIATION_FAILED,
ERROR, asserted on the execution history, the incident-state item and the notifications.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from incident_responder.approval.decision import task_token_from_history
from incident_responder.core.contracts import ApprovalDecision, RemediationAction, actions_digest
from incident_responder.lab.engine import wait_for_execution
from incident_responder.lab.moto_patches.stepfunctions import instant_retries
from incident_responder.remediation import lease as leases
from incident_responder.reporting.report import collect, render_html
from incident_responder.state.lifecycle import (
    execution_path,
    get_incident_state,
    history,
    reconcile_execution,
    sweep_stuck,
)
from tests.conftest import CONTEXT_TABLE, STATE_TABLE
from tests.lifecycle_paths import HAPPY, diagnosed, proposed, start
from tests.report_checks import assert_report

ACTIONS = [
    RemediationAction(
        fault_type="permission_loss",
        action_type="restore_iam_policy",
        target_resource="arn:aws:iam::123456789012:role/data-processor-role",
        parameters={
            "role_name": "data-processor-role",
            "policy_name": "s3-access",
            "policy_document": {"Version": "2012-10-17", "Statement": []},
        },
        risk_level="high",
        execution_order=1,
    ).model_dump(mode="json"),
    RemediationAction(
        fault_type="throttling",
        action_type="update_concurrency",
        target_resource="arn:aws:lambda:us-east-1:123456789012:function:data-processor",
        parameters={"function_name": "data-processor", "reserved_concurrent_executions": 10},
        risk_level="low",
        requires_approval=False,
        execution_order=2,
    ).model_dump(mode="json"),
]
DIGEST = actions_digest(ACTIONS)
UP_TO_PROPOSAL = HAPPY[: HAPPY.index("Closed loop?") + 1]


def decision(kind="approve", digest=DIGEST, channel="link", by="alice@example.com", reason=None) -> dict:
    return ApprovalDecision(
        decision=kind,
        decided_by=by,
        decided_at="2026-11-23T04:05:00Z",
        channel=channel,
        actions_digest=digest,
        reason=reason,
    ).model_dump(mode="json")


def review(outcome="NEEDS_APPROVAL"):
    def handler(event, context):
        return {
            "incident_id": event["incident"]["incident_id"],
            "outcome": outcome,
            "end_reason": "submitted",
            "verdicts": [
                {"execution_order": a["execution_order"], "verdict": "needs_human", "reasons": ["r"], "evidence": []}
                for a in ACTIONS
            ],
            "actions": ACTIONS if outcome != "REJECTED" else [],
            "rejected": [] if outcome != "REJECTED" else [{"action": a, "reasons": ["no evidence"]} for a in ACTIONS],
            "actions_digest": DIGEST if outcome != "REJECTED" else actions_digest([]),
            "risk": "high",
            "approval": decision(channel="auto", by="auto-approve (AutoApprove=low)")
            if outcome == "APPROVED"
            else None,
            "summary": "the critic's summary",
            "metrics": {"llm_calls": 2},
        }

    return handler


class Person:
    """Stands in for the approval request function: keeps the token, answers it from another thread."""

    def __init__(self, clients, answer=None, delay=0.2):
        self.clients, self.answer, self.delay, self.events = clients, answer, delay, []

    def __call__(self, event, context):
        self.events.append(event)
        if self.answer is not None:
            threading.Thread(target=self._answer, args=(event["task_token"],), daemon=True).start()
        return {"requested": True, "approval_expires_at": "2026-11-23T05:00:00Z"}

    def _answer(self, token):
        time.sleep(self.delay)
        sfn = self.clients.get("stepfunctions")
        kind, payload = self.answer
        if kind == "success":
            sfn.send_task_success(taskToken=token, output=json.dumps(payload))
        else:
            sfn.send_task_failure(taskToken=token, error="ApprovalRejected", cause=json.dumps(payload))


STEP = {"execution_order": 1, "action_type": "restore_iam_policy", "target_resource": "data-processor-role"}
STEP2 = {"execution_order": 2, "action_type": "update_concurrency", "target_resource": "data-processor"}


class Remediator:
    def __init__(
        self,
        apply_outcome="APPLIED",
        undo_outcome="ROLLED_BACK",
        apply_raises=None,
        undo_error="AccessDenied on PutRolePolicy",
        apply_steps=None,
        undo_steps=None,
    ):
        self.apply_steps, self.undo_steps = apply_steps, undo_steps
        self.calls, self.apply_outcome, self.undo_outcome, self.apply_raises = (
            [],
            apply_outcome,
            undo_outcome,
            apply_raises,
        )
        self.undo_error = undo_error

    def __call__(self, event, context):
        self.calls.append(event)
        if event["operation"] == "apply":
            if self.apply_raises:
                raise self.apply_raises
            failed = self.apply_outcome != "APPLIED"
            return {
                "outcome": self.apply_outcome,
                "steps": self.apply_steps
                if self.apply_steps is not None
                else [{**STEP, "status": "applied"}] + ([{**STEP2, "status": "failed"}] if failed else []),
                "failed_step": 2 if failed else None,
                "error": "ServiceException: refused" if failed else None,
                "finished_at": "2026-11-23T04:06:00Z",
            }
        if event["operation"] == "release":
            return {"released": []}
        return {
            "outcome": self.undo_outcome,
            "steps": self.undo_steps
            if self.undo_steps is not None
            else [{**STEP, "status": "undone" if self.undo_outcome == "ROLLED_BACK" else "undo_failed"}],
            "error": None if self.undo_outcome == "ROLLED_BACK" else self.undo_error,
        }


def verifier(outcome="VERIFIED"):
    def handler(event, context):
        return {
            "outcome": outcome,
            "checks": [],
            "needs_person": [],
            "summary": "every actioned configuration is back at its baseline and the function is healthy"
            if outcome == "VERIFIED"
            else "timeout differs from the baseline",
        }

    return handler


class NoMoreThanOneRetry(Exception):
    pass


@pytest.fixture
def loop(clients, lifecycle, dispatcher):  # noqa: F811 - the deploy fixture
    """Deploys the lifecycle in closed_loop mode with scripted functions; returns a runner."""
    sqs, sns = clients.get("sqs"), clients.get("sns")
    inboxes = {}
    for topic in ("incident-news", "operators"):
        queue = sqs.create_queue(QueueName=f"inbox-{topic}")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=sns.create_topic(Name=topic)["TopicArn"], Protocol="sqs", Endpoint=arn)
        inboxes[topic] = queue

    def run(
        *,
        review_outcome="NEEDS_APPROVAL",
        person=None,
        remediator=None,
        verify="VERIFIED",
        wait=True,
        **overrides,
    ):
        dispatcher.register("investigate", diagnosed)
        dispatcher.register("propose", proposed)
        dispatcher.register("review", review(review_outcome))
        dispatcher.register("approval-request", person or Person(clients, ("success", decision())))
        dispatcher.register("remediate", remediator or Remediator())
        dispatcher.register("verify", verify if callable(verify) else verifier(verify))
        machine = lifecycle(**{"RemediationMode": "closed_loop", **overrides})
        if not wait:
            return machine
        incident, execution = start(clients, machine)
        visited = execution_path(clients.get("stepfunctions"), execution["executionArn"])
        return incident, execution, visited, get_incident_state(clients, STATE_TABLE, incident.incident_id)

    def messages(topic):
        got = sqs.receive_message(QueueUrl=inboxes[topic], MaxNumberOfMessages=10).get("Messages", [])
        return [json.loads(m["Body"]) for m in got]

    run.messages = messages
    return run


def test_approved_by_a_person_applied_verified_remediated(clients, loop):
    remediator = Remediator()
    incident, execution, visited, state = loop(remediator=remediator)
    assert execution["status"] == "SUCCEEDED"
    assert visited == UP_TO_PROPOSAL + [
        "REVIEWING",
        "Run critic agent",
        "Review outcome?",
        "AWAITING_APPROVAL",
        "Wait for approval",
        "Approval matches?",
        "REMEDIATING",
        "Apply actions",
        "Applied?",
        "VERIFYING",
        "Settle",
        "Verify fix",
        "Fixed?",
        "REMEDIATED",
        "Free the resources",
        "Notify remediated",
        "Remediated",
    ]
    assert state["status"] == "REMEDIATED"
    # Who approved, when, how, and exactly what: recorded with the incident.
    assert (state["approved_by"], state["approval_channel"], state["actions_digest"]) == (
        "alice@example.com",
        "link",
        DIGEST,
    )
    assert state["verification_json"]["outcome"] == "VERIFIED"
    for stamp in ("reviewing_at", "awaiting_approval_at", "remediating_at", "verifying_at", "remediated_at"):
        assert stamp in state
    assert state["ended_at"] == state["remediated_at"]
    # The remediate function got the reviewed actions, their digest and the approval, once; then freed the resources.
    applied, released = remediator.calls
    assert released == {"operation": "release", "incident": applied["incident"]}
    assert applied["operation"] == "apply" and applied["actions"] == ACTIONS
    assert applied["actions_digest"] == DIGEST and applied["approval"]["decided_by"] == "alice@example.com"
    subjects = [m["Subject"] for m in loop.messages("incident-news")]
    assert f"Remediated: data-processor ({incident.incident_id})" in subjects


def test_the_approval_request_gets_the_task_token_and_the_review(clients, loop):
    person = Person(clients, ("success", decision()))
    incident, execution, _, _ = loop(person=person, ApprovalTimeoutMinutes=2)
    (event,) = person.events
    assert event["task_token"] and event["timeout_seconds"] == 120
    assert event["review"]["actions_digest"] == DIGEST and event["execution_arn"] == execution["executionArn"]
    # The token is in the execution history, where `responder approve` (the caller's credentials) finds it.
    assert (
        task_token_from_history(history(clients.get("stepfunctions"), execution["executionArn"]))
        == (event["task_token"])
    )


def test_auto_approved_low_risk_skips_the_person(clients, loop):
    person = Person(clients)
    _, _, visited, state = loop(review_outcome="APPROVED", person=person)
    assert "AWAITING_APPROVAL" not in visited and "Approved automatically" in visited
    assert state["status"] == "REMEDIATED" and person.events == []
    assert (state["approved_by"], state["approval_channel"]) == ("auto-approve (AutoApprove=low)", "auto")


def test_an_approval_for_other_actions_is_refused(clients, loop):
    other = "sha256:" + "0" * 64
    remediator = Remediator()
    _, _, visited, state = loop(person=Person(clients, ("success", decision(digest=other))), remediator=remediator)
    assert visited[-4:] == ["Approval for other actions", "REJECTED", "Notify rejected", "Rejected"]
    assert state["status"] == "REJECTED" and remediator.calls == []


def test_rejected_by_a_person(clients, loop):
    remediator = Remediator()
    person = Person(clients, ("failure", decision("reject", by="bob@example.com", reason="not during the sale")))
    incident, execution, visited, state = loop(person=person, remediator=remediator)
    assert execution["status"] == "SUCCEEDED" and visited[-3:] == ["REJECTED", "Notify rejected", "Rejected"]
    assert (state["status"], state["rejected_by"], state["rejection_reason"]) == (
        "REJECTED",
        "bob@example.com",
        "not during the sale",
    )
    assert remediator.calls == [] and "ended_at" in state


def test_rejected_by_the_critic_never_asks_a_person(clients, loop):
    person = Person(clients)
    _, _, visited, state = loop(review_outcome="REJECTED", person=person)
    assert "Rejected by the critic" in visited and "AWAITING_APPROVAL" not in visited
    assert state["status"] == "REJECTED" and person.events == []


def test_nobody_answers_approval_expired(clients, loop):
    remediator = Remediator()
    # 0.02 minutes: the task times out after round(1.2) = 1 s.
    _, execution, visited, state = loop(person=Person(clients), remediator=remediator, ApprovalTimeoutMinutes=0.02)
    assert execution["status"] == "SUCCEEDED"
    assert visited[-4:] == ["Wait for approval", "APPROVAL_EXPIRED", "Notify expired", "Approval expired"]
    assert state["status"] == "APPROVAL_EXPIRED" and remediator.calls == []


def test_an_approval_request_that_cannot_be_sent_is_an_error(clients, loop):
    def broken(event, context):
        raise RuntimeError("the approval topic refused the message")

    with instant_retries():
        _, execution, visited, state = loop(person=broken)
    assert execution["status"] == "FAILED"
    assert (state["status"], state["error_category"]) == ("ERROR", "approval_unavailable")


@pytest.mark.parametrize(
    "remediator, verify, reason",
    [
        (Remediator(apply_outcome="FAILED"), "VERIFIED", "action 2 failed: ServiceException: refused"),
        (Remediator(apply_raises=NoMoreThanOneRetry("boom")), "VERIFIED", "the actions could not be applied"),
        (Remediator(), "NOT_FIXED", "the symptom remains: timeout differs from the baseline"),
    ],
    ids=["action-failed", "apply-raised", "not-fixed"],
)
def test_failed_remediation_or_verification_rolls_back(clients, loop, remediator, verify, reason):
    incident, execution, visited, state = loop(remediator=remediator, verify=verify)
    assert execution["status"] == "SUCCEEDED"
    assert visited[-6:] == [
        "ROLLING_BACK",
        "Undo actions",
        "Undone?",
        "ROLLED_BACK",
        "Notify rolled back",
        "Rolled back",
    ]
    assert state["status"] == "ROLLED_BACK" and state["rollback_reason"].startswith(reason)
    assert state["undo_json"]["outcome"] == "ROLLED_BACK"
    undo = remediator.calls[-1]
    assert undo["operation"] == "rollback" and undo["reason"].startswith(reason)
    subjects = [m["Subject"] for m in loop.messages("incident-news")]
    assert any(s.startswith("Rolled back") for s in subjects), subjects


class HealthNotYetKnownError(Exception):
    pass


def test_a_fix_whose_metrics_are_not_yet_reported_is_verified_again_a_minute_later(clients, loop):
    """CloudWatch reports a function's minute only once its timeout has passed: the verify function says health is
    not yet known, and the state machine asks again a minute later instead of rolling a correct fix back."""
    calls = []

    def late_metrics(event, context):
        calls.append(event)
        if len(calls) < 3:
            raise HealthNotYetKnownError("no whole minute after the change is reported yet (until 04:09:00Z)")
        return verifier()(event, context)

    with instant_retries() as delays:
        incident, execution, visited, state = loop(verify=late_metrics)
    assert state["status"] == "REMEDIATED" and "ROLLING_BACK" not in visited
    assert len(calls) == 3 and delays == [60, 60]


def test_a_remediated_notice_says_what_each_step_did(clients, loop):
    """Defect: the notices listed every approved action as "Applied" or "Undone", whatever happened to each."""
    steps = [{**STEP, "status": "already_restored"}, {**STEP2, "status": "applied"}]
    incident, execution, visited, state = loop(remediator=Remediator(apply_steps=steps))
    assert state["status"] == "REMEDIATED"
    (said,) = [m for m in loop.messages("incident-news") if m["Subject"].startswith("Remediated")]
    assert "1. restore_iam_policy on data-processor-role: already restored\n" in said["Message"]
    assert "2. update_concurrency on data-processor: applied\n" in said["Message"]


def test_a_rollback_with_nothing_applied_says_so(clients, loop):
    """Defect: an apply refused at its first step ended ROLLED_BACK with a notice listing every action as "Undone"."""
    steps = [{**STEP, "status": "failed"}, {**STEP2, "status": "not_attempted"}]
    remediator = Remediator(apply_outcome="FAILED", apply_steps=steps, undo_steps=[])
    incident, execution, visited, state = loop(remediator=remediator)
    assert state["status"] == "ROLLED_BACK"
    (said,) = [m for m in loop.messages("incident-news") if m["Subject"].startswith("Rolled back")]
    assert "Nothing had been applied, so nothing was undone" in said["Message"]
    assert "Undone" not in said["Message"] and "back to the state it was in" not in said["Message"]
    assert said["Message"].endswith(
        "What applying did:\n  1. restore_iam_policy on data-processor-role: failed\n"
        "  2. update_concurrency on data-processor: not attempted"
    )


def test_an_undo_that_fails_is_remediation_failed_and_alarms_operators(clients, loop):
    remediator = Remediator(apply_outcome="FAILED", undo_outcome="ROLLBACK_FAILED")
    _, execution, visited, state = loop(remediator=remediator)
    assert execution["status"] == "FAILED"
    assert visited[-3:] == ["REMEDIATION_FAILED", "Alarm operators", "Remediation failed"]
    assert (state["status"], state["error_category"]) == ("REMEDIATION_FAILED", "undo_failed")
    assert "AccessDenied on PutRolePolicy" in state["error_reason"]
    (alarm,) = loop.messages("operators")
    assert alarm["Subject"].startswith("REMEDIATION FAILED, account changed: data-processor")
    assert "could not undo it" in alarm["Message"]
    # Its report, from the stores: the failure and the path that ended in it.
    page = render_html(collect(clients, state["incident_id"], state_table=STATE_TABLE, context_table=CONTEXT_TABLE))
    assert_report(page, "REMEDIATION_FAILED")
    assert "AccessDenied on PutRolePolicy" in page and 'class="state failed" data-state="Remediation failed"' in page


def test_an_undo_error_quoting_aws_still_records_and_alarms(clients, loop):
    """AWS error texts quote names ("role \"orders\""); in the lab a double quote in a variable broke every JSONata
    expression that read it, so the status write failed and the operators were never alarmed."""
    said = 'AccessDenied: not authorized to perform iam:PutRolePolicy on role "orders" \\ (it\'s denied)'
    remediator = Remediator(apply_outcome="FAILED", undo_outcome="ROLLBACK_FAILED", undo_error=said)
    _, execution, visited, state = loop(remediator=remediator)
    assert visited[-3:] == ["REMEDIATION_FAILED", "Alarm operators", "Remediation failed"], visited
    assert (state["status"], state["error_category"]) == ("REMEDIATION_FAILED", "undo_failed")
    assert said in state["error_reason"]
    (alarm,) = loop.messages("operators")
    assert said in alarm["Message"]


@pytest.mark.parametrize("code, status", [("InternalError", 500), ("Throttled", 400)])
def test_the_operator_alarm_is_retried_when_sns_fails_for_a_moment(clients, loop, lab, code, status):
    """The last word of an incident that may have left the account changed: one failed Publish lost it."""
    remediator = Remediator(apply_outcome="FAILED", undo_outcome="ROLLBACK_FAILED")
    lab.fail_requests("Publish", service="sns", code=code, status=status, times=2)
    try:
        with instant_retries() as delays:
            _, execution, visited, state = loop(remediator=remediator)
    finally:
        lab.clear_failures()
    assert lab.failed_requests[-2:] == ["sns:Publish", "sns:Publish"]
    assert visited[-3:] == ["REMEDIATION_FAILED", "Alarm operators", "Remediation failed"], visited
    (alarm,) = loop.messages("operators")
    assert alarm["Subject"].startswith("REMEDIATION FAILED, account changed: data-processor")
    assert len(delays) == 2, delays


def test_propose_only_and_nothing_automatable_end_at_proposal_ready(clients, loop, lifecycle, dispatcher):  # noqa: F811
    machine = loop(wait=False, RemediationMode="propose_only")
    incident, execution = start(clients, machine)
    assert execution_path(clients.get("stepfunctions"), execution["executionArn"]) == HAPPY
    assert get_incident_state(clients, STATE_TABLE, incident.incident_id)["status"] == "PROPOSAL_READY"

    def nothing(event, context):
        return {**proposed(event, context), "actions": 0, "unresolvable_faults": ["application_error"]}

    dispatcher.register("propose", nothing)
    machine = lifecycle(RemediationMode="closed_loop")
    incident, execution = start(clients, machine, at="2026-11-23T04:01:00Z")
    assert execution_path(clients.get("stepfunctions"), execution["executionArn"])[-2:] == ["Closed loop?", "Done"]
    assert get_incident_state(clients, STATE_TABLE, incident.incident_id)["status"] == "PROPOSAL_READY"


def test_an_execution_dying_while_acting_is_remediation_failed_and_the_sweep_leaves_approvals_alone(clients, loop):
    machine = loop(wait=False, person=Person(clients), ApprovalTimeoutMinutes=5)
    from incident_responder.intake.alerts import parse_alert
    from incident_responder.state.lifecycle import execution_input

    sfn = clients.get("stepfunctions")
    incident = parse_alert({"function_name": "data-processor", "detected_at": "2026-11-23T04:00:00Z"})
    arn = sfn.start_execution(
        stateMachineArn=machine, name=incident.incident_id, input=json.dumps(execution_input(incident))
    )["executionArn"]
    for _ in range(200):
        if (get_incident_state(clients, STATE_TABLE, incident.incident_id) or {}).get("status") == "AWAITING_APPROVAL":
            break
        time.sleep(0.05)
    # Waiting for a person is bounded by its own timeout: the sweep never stops it.
    active: dict[str, int] = {}
    assert sweep_stuck(clients, STATE_TABLE, older_than_minutes=0, active=active) == []
    assert active == {"AWAITING_APPROVAL": 1}  # the sweep's ApprovalsPending gauge
    assert sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"
    # Pretend it was acting on the account when it died.
    clients.get("dynamodb").update_item(
        TableName=get_state_table(),
        Key={"incident_id": {"S": incident.incident_id}},
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": "REMEDIATING"}},
    )
    # moto's StopExecution does not interrupt a task waiting for its token: reconcile as EventBridge would
    # report the abort, then let the waiting task end.
    assert reconcile_execution(clients, STATE_TABLE, arn, "ABORTED") == "marked_remediation_failed"
    state = get_incident_state(clients, STATE_TABLE, incident.incident_id)
    assert (state["status"], state["error_category"]) == ("REMEDIATION_FAILED", "execution_aborted")
    token = task_token_from_history(history(sfn, arn))
    sfn.send_task_failure(taskToken=token, error="ApprovalRejected", cause=json.dumps(decision("reject")))
    assert wait_for_execution(sfn, arn)["status"] in ("SUCCEEDED", "FAILED")
    assert (
        get_incident_state(clients, STATE_TABLE, incident.incident_id)["status"] == "REMEDIATION_FAILED"
    )  # never overwritten


def get_state_table() -> str:
    return STATE_TABLE


class ApprovalMismatchError(Exception):
    pass


def test_an_apply_refused_before_any_change_is_an_error_not_a_rollback(clients, loop):
    remediator = Remediator(apply_raises=ApprovalMismatchError("the approval is for sha256:00.. not these actions"))
    _, execution, visited, state = loop(remediator=remediator)
    assert execution["status"] == "FAILED" and "ROLLING_BACK" not in visited
    assert (state["status"], state["error_category"]) == ("ERROR", "remediation_refused")
    assert state["error_reason"].startswith("ApprovalMismatchError: the approval is for")
    assert [c["operation"] for c in remediator.calls] == ["apply"]


class ResourceLeaseHeldError(Exception):
    pass


RESOURCE = "function:data-processor"


class Leasing(Remediator):
    """Takes and gives back the lease of the function's configuration as the remediate function does (tied to the
    execution), then answers as scripted."""

    def __init__(self, clients, **kwargs):
        super().__init__(**kwargs)
        self.clients = clients

    def __call__(self, event, context):
        incident, table = event["incident"], get_state_table()
        if event["operation"] == "apply":
            leases.take_all(self.clients, table, [RESOURCE], incident["incident_id"], event.get("execution"))
        if event["operation"] == "release":
            self.calls.append(event)
            return {"released": leases.release_all(self.clients, table, [RESOURCE], incident["incident_id"])}
        return super().__call__(event, context)


def test_a_remediated_incident_frees_its_resources_for_the_next(clients, loop):
    incident, execution, visited, state = loop(remediator=Leasing(clients))
    assert state["status"] == "REMEDIATED" and "Free the resources" in visited
    assert leases.holder(clients, get_state_table(), RESOURCE) is None
    item = clients.get("dynamodb").get_item(TableName=get_state_table(), Key=leases.lease_key(RESOURCE))["Item"]
    assert item["released_by"]["S"] == incident.incident_id and "status" not in item  # the sweep never sees it
    assert item["fence"]["N"] == "1"  # kept: the next holder's token is newer


def test_a_remediated_incident_never_frees_a_resource_another_incident_holds(clients, loop):
    leases.take(clients, get_state_table(), RESOURCE, "inc-other")
    incident, execution, visited, state = loop()
    assert (execution["status"], state["status"]) == ("SUCCEEDED", "REMEDIATED") and "Free the resources" in visited
    assert leases.holder(clients, get_state_table(), RESOURCE)["holder"] == "inc-other"


def test_a_resource_another_incident_keeps_remediating_is_waited_for_then_handed_over(clients, loop):
    held = ResourceLeaseHeldError(
        "incident inc-other is remediating data-processor (its lease runs until 2026-11-24T10:30:00Z); "
        "nothing was applied for incident inc-1"
    )
    remediator = Remediator(apply_raises=held)
    with instant_retries() as delays:
        incident, execution, visited, state = loop(remediator=remediator)
    assert delays == [30, 60, 120, 240, 300, 300, 300, 300]  # about 27 minutes of waiting in AWS
    assert [c["operation"] for c in remediator.calls] == ["apply"] * 9 and "ROLLING_BACK" not in visited
    assert visited[-3:] == ["Handed over", "ERROR", "Incident error"]
    assert (state["status"], state["error_category"]) == ("ERROR", "resource_busy")
    assert "incident inc-other is remediating data-processor" in state["error_reason"]
    (said,) = [m for m in loop.messages("incident-news") if m["Subject"].startswith("Handed over")]
    assert said["Subject"] == f"Handed over, needs a person: data-processor ({incident.incident_id})"
    assert "Nothing was applied for it" in said["Message"] and "1. restore_iam_policy on" in said["Message"]
