"""REMEDIATING, ROLLING_BACK and VERIFYING for the failure catalogue's three restores, against the lab: a secret's
scheduled deletion cancelled, a queue's visibility timeout put back, ephemeral storage put back. Each applies
(the account changes) with its exact prior state in the undo ledger, repeats nothing when retried, undoes to that
prior state, and refuses to undo what changed since it set it; then verification of what was done.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from incident_responder.account.baseline import record_baseline
from incident_responder.actions.function_configuration import get_function_config_restore_info
from incident_responder.actions.queue import get_queue_restore_info
from incident_responder.actions.registry import CHANGES
from incident_responder.actions.secret import get_secret_restore_info, recovery_window_days
from incident_responder.core.contracts import Incident, ProposalSubmission, RemediationAction, actions_digest
from incident_responder.remediation import remediate
from incident_responder.remediation.health import HealthReport, InvocationSample, symptom_of
from incident_responder.state import keys
from tests.catalogue_account import (
    CONSUMER,
    ORDERS,
    PROCESSOR,
    STATE_TABLE,
    TMP_MB,
    VISIBILITY,
    catalogue_account,
    create_function,
    create_secret,
)
from tests.remediation_world import approval, counting, ledger_item, prior, run_verify

WRITES = {"RestoreSecret", "DeleteSecret", "SetQueueAttributes", "UpdateFunctionConfiguration"}
SERVICES = ("secretsmanager", "sqs", "lambda")


@pytest.fixture(scope="module")
def account(lab, _lab_clients):
    with catalogue_account(lab, _lab_clients) as ready:
        yield ready


@pytest.fixture
def world(account):
    account.reset()
    yield account
    account.reset()


def new_incident(function: str) -> Incident:
    return Incident(
        incident_id=f"inc-{uuid.uuid4().hex[:12]}",
        function_name=function,
        source="alert",
        detected_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


LOOKUPS = {
    "secret": get_secret_restore_info,
    "queue": get_queue_restore_info,
    "storage": get_function_config_restore_info,
}


def restore_actions(clients, function: str, kind: str) -> list[RemediationAction]:
    """The remediation server's ready-made actions, ordered and numbered as a proposal."""
    submitted = LOOKUPS[kind](clients, function).actions
    return ProposalSubmission(actions=submitted).to_proposal("i-1").actions


def run_apply(clients, incident, chosen):
    return remediate.apply(
        clients,
        table=STATE_TABLE,
        incident=incident,
        actions=chosen,
        actions_digest=actions_digest(chosen),
        approval=approval(chosen),
        ttl_days=7,
    )


def rollback(clients, incident):
    return remediate.rollback(clients, table=STATE_TABLE, incident=incident, reason="NOT_FIXED")


def writes(calls) -> dict[str, int]:
    return {name: n for name, n in calls.items() if name in WRITES}


def mark_recorded(clients, incident, order: int) -> None:
    """As if the task died after recording the step's prior state, before marking it applied."""
    clients.get("dynamodb").update_item(
        TableName=STATE_TABLE,
        Key={"incident_id": {"S": keys.ledger_step(incident.incident_id, order)}},
        UpdateExpression="SET progress = :p",
        ExpressionAttributeValues={":p": {"S": "recorded"}},
    )


# -- one case per action: fault, what the account reads, what the ledger records ------------------------
CASES = {
    "secret": {
        "function": ORDERS,
        "fault": lambda w: w.schedule_deletion(),
        "read": lambda w: w.scheduled(),
        "faulted": True,
        "restored": False,
        "compared": lambda w: {"secret_arn": w.secret_arn, "exists": True, "scheduled_for_deletion": True},
        "write": "RestoreSecret",
        "undo_write": "DeleteSecret",
        "changed_since": None,  # see test_an_undo_refuses_a_secret_deleted_for_good_since
    },
    "queue": {
        "function": CONSUMER,
        "fault": lambda w: w.set_visibility(10),
        "read": lambda w: w.visibility(),
        "faulted": 10,
        "restored": VISIBILITY,
        "compared": lambda w: {"queue_arn": w.queue_arn, "visibility_timeout": 10},
        "write": "SetQueueAttributes",
        "undo_write": "SetQueueAttributes",
        "changed_since": lambda w: w.set_visibility(60),
    },
    "storage": {
        "function": PROCESSOR,
        "fault": lambda w: w.set_tmp(512),
        "read": lambda w: w.tmp(),
        "faulted": 512,
        "restored": TMP_MB,
        "compared": lambda w: {"function_name": PROCESSOR, "EphemeralStorage": 512},
        "write": "UpdateFunctionConfiguration",
        "undo_write": "UpdateFunctionConfiguration",
        "changed_since": lambda w: w.set_tmp(2048),
    },
}


def applied(world, kind):
    case = CASES[kind]
    case["fault"](world)
    actions = restore_actions(world.clients, case["function"], kind)
    assert len(actions) == 1
    incident = new_incident(case["function"])
    result = run_apply(world.clients, incident, actions)
    assert result.outcome == "APPLIED" and [s.status for s in result.steps] == ["applied"], result
    return incident, actions, result


@pytest.mark.parametrize("kind", sorted(CASES))
def test_apply_changes_the_account_records_the_prior_state_and_rollback_restores_it(world, kind):
    case, clients = CASES[kind], world.clients
    case["fault"](world)
    actions = restore_actions(clients, case["function"], kind)
    incident = new_incident(case["function"])

    with counting(clients, *SERVICES) as calls:
        result = run_apply(clients, incident, actions)
    assert result.outcome == "APPLIED" and [s.status for s in result.steps] == ["applied"], result
    assert writes(calls) == {case["write"]: 1}
    assert case["read"](world) == case["restored"]
    recorded = prior(clients, incident, 1)
    assert {k: recorded[k] for k in case["compared"](world)} == case["compared"](world)

    # The same task again: already applied, nothing called. A task that died after recording: the step runs again,
    # finds its change made, writes nothing, and its recorded prior state stays the faulted one.
    with counting(clients, *SERVICES) as calls:
        assert [s.status for s in run_apply(clients, incident, actions).steps] == ["already_applied"]
    mark_recorded(clients, incident, 1)
    with counting(clients, *SERVICES) as calls_again:
        retried = run_apply(clients, incident, actions)
    assert writes(calls) == {} and [s.status for s in retried.steps] == ["applied"]
    if kind != "storage":  # UpdateFunctionConfiguration is repeated (same values): Lambda tolerates it
        assert writes(calls_again) == {} and "already" in retried.steps[0].detail
    assert prior(clients, incident, 1) == recorded

    with counting(clients, *SERVICES) as calls:
        undo = rollback(clients, incident)
    assert undo.outcome == "ROLLED_BACK", undo.error
    ((status, detail),) = [(s.status, s.detail) for s in undo.steps]
    assert status == "undone" and detail.startswith("restored the recorded prior state")
    assert writes(calls) == {case["undo_write"]: 1}
    assert case["read"](world) == case["faulted"]
    assert ledger_item(clients, incident, 1)["progress"]["S"] == "undone"
    with counting(clients, *SERVICES) as calls:  # undone already: a second rollback writes nothing
        assert rollback(clients, incident).outcome == "ROLLED_BACK"
    assert writes(calls) == {}


def test_the_ledger_says_how_a_restored_secret_is_deleted_again(world):
    """The window the deletion was scheduled with is DeletedDate - LastChangedDate when the secret last changed at
    the DeleteSecret request (here: its value was updated just before): the undo schedules the deletion again with
    that window, and the ledger says so before anything is changed."""
    sm = world.clients.get("secretsmanager")
    sm.update_secret(SecretId=world.secret_arn, SecretString="rotated")
    world.schedule_deletion(days=12)
    (action,) = restore_actions(world.clients, ORDERS, "secret")
    incident = new_incident(ORDERS)
    assert run_apply(world.clients, incident, [action]).outcome == "APPLIED" and not world.scheduled()
    recorded = prior(world.clients, incident, 1)
    assert (recorded["scheduled_for_deletion"], recorded["recovery_window_days"]) == (True, 12)
    assert recorded["undo"].startswith("DeleteSecret RecoveryWindowInDays=12: the window this deletion was scheduled")
    undo = rollback(world.clients, incident)
    (step,) = undo.steps
    assert step.status == "undone" and "again, in 12 days (its recorded window)" in step.detail
    deleted = sm.describe_secret(SecretId=world.secret_arn)["DeletedDate"]
    assert timedelta(days=11) < deleted - datetime.now(deleted.tzinfo) <= timedelta(days=12)


@pytest.mark.parametrize("kind", ["queue", "storage"])
def test_an_undo_refuses_what_changed_since_the_step_set_it(world, kind):
    case = CASES[kind]
    incident, _, _ = applied(world, kind)
    case["changed_since"](world)  # a person (or another incident) changed it after the restore
    changed = case["read"](world)
    with counting(world.clients, *SERVICES) as calls:
        undo = rollback(world.clients, incident)
    assert undo.outcome == "ROLLBACK_FAILED" and writes(calls) == {}
    (step,) = undo.steps
    assert step.status == "undo_failed" and "changed since this incident set it" in step.error
    assert case["read"](world) == changed
    assert ledger_item(world.clients, incident, 1)["progress"]["S"] == "undo_failed"


def test_an_undo_refuses_a_secret_deleted_for_good_since(world):
    """A function of its own: the secret is gone for good after this test."""
    clients = world.clients
    arn = create_secret(clients, "payments/key")
    create_function(clients, "payments-worker", Environment={"Variables": {"KEY_ARN": arn}})
    record_baseline(clients, "payments-worker")
    world.schedule_deletion(arn)
    (action,) = restore_actions(clients, "payments-worker", "secret")
    incident = new_incident("payments-worker")
    assert run_apply(clients, incident, [action]).outcome == "APPLIED" and not world.scheduled(arn)
    clients.get("secretsmanager").delete_secret(SecretId=arn, ForceDeleteWithoutRecovery=True)
    with counting(clients, *SERVICES) as calls:
        undo = rollback(clients, incident)
    (step,) = undo.steps
    assert undo.outcome == "ROLLBACK_FAILED" and writes(calls) == {}
    assert step.status == "undo_failed" and "changed since this incident set it" in step.error
    assert "exists: expected true, found false" in step.error


def test_a_secret_scheduled_for_deletion_again_by_someone_is_already_in_its_prior_state(world):
    """Compare-and-swap compares whether the secret is scheduled for deletion, not when: nothing is called."""
    incident, _, _ = applied(world, "secret")
    world.schedule_deletion(days=20)
    with counting(world.clients, *SERVICES) as calls:
        undo = rollback(world.clients, incident)
    assert undo.outcome == "ROLLED_BACK" and writes(calls) == {}
    assert [(s.status, s.detail) for s in undo.steps] == [("undone", "already in its recorded prior state")]


def test_a_queue_someone_already_put_back_is_already_restored(world):
    """Approved, then someone put the visibility timeout back: applying would change nothing, so nothing is written
    and the step says so (it was refused as nothing to restore, failing the apply)."""
    world.set_visibility(10)
    actions = restore_actions(world.clients, CONSUMER, "queue")
    world.set_visibility(VISIBILITY)
    incident = new_incident(CONSUMER)
    with counting(world.clients, *SERVICES) as calls:
        result = run_apply(world.clients, incident, actions)
    assert result.outcome == "APPLIED" and writes(calls) == {}
    assert [s.status for s in result.steps] == ["already_restored"]
    assert ledger_item(world.clients, incident, 1) is None


# -- the recovery window, when DescribeSecret tells it ---------------------------------------------------
class _Secrets:
    """A Secrets Manager client that answers DescribeSecret as given and records DeleteSecret."""

    def __init__(self, described):
        self.described, self.deleted = described, []

    def describe_secret(self, SecretId):  # noqa: N803 - boto3's argument names
        return self.described

    def delete_secret(self, SecretId, RecoveryWindowInDays):  # noqa: N803
        self.deleted.append((SecretId, RecoveryWindowInDays))
        self.described = {**self.described, "DeletedDate": datetime.now(UTC) + timedelta(days=RecoveryWindowInDays)}


class _Clients:
    def __init__(self, secrets):
        self.secrets = secrets

    def get(self, service):
        assert service == "secretsmanager"
        return self.secrets


def secret_params(arn: str):
    return RemediationAction.model_validate(
        {
            "fault_type": "dependency_missing",
            "action_type": "restore_secret",
            "target_resource": arn,
            "parameters": {"secret_arn": arn},
        }
    ).typed_parameters()


def test_the_undo_keeps_the_recovery_window_describe_secret_tells():
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:orders-api/payment-key-AbCdEf"
    requested = datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)
    described = {"ARN": arn, "LastChangedDate": requested, "DeletedDate": requested + timedelta(days=12, seconds=1)}
    assert recovery_window_days(described) == 12
    # Not a whole number of days (the secret changed otherwise since), or outside Secrets Manager's bounds: unknown.
    assert recovery_window_days({**described, "DeletedDate": requested + timedelta(days=12, hours=5)}) is None
    assert recovery_window_days({**described, "DeletedDate": requested + timedelta(days=45)}) is None
    assert recovery_window_days({"ARN": arn, "LastChangedDate": requested}) is None

    change, params = CHANGES["restore_secret"], secret_params(arn)
    secrets = _Secrets(described)
    recorded = change.capture(_Clients(secrets), params)
    assert recorded["recovery_window_days"] == 12
    assert recorded["undo"].startswith("DeleteSecret RecoveryWindowInDays=12: the window this deletion was scheduled")
    secrets.described = {"ARN": arn, "LastChangedDate": requested}  # restored
    said = change.restore(_Clients(secrets), params, recorded)
    assert secrets.deleted == [(arn, 12)] and "in 12 days (its recorded window)" in said
    assert change.comparable(change.capture(_Clients(secrets), params)) == change.comparable(recorded)
    assert json.dumps(recorded)  # the ledger stores it as JSON


def test_without_the_recovery_window_the_undo_uses_the_minimum_and_the_ledger_says_so():
    """The secret changed otherwise after the DeleteSecret request (or Secrets Manager did not stamp it): the window
    cannot be told, and the deletion is scheduled again with Secrets Manager's minimum, 7 days."""
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:orders-api/payment-key-AbCdEf"
    changed = datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)
    secrets = _Secrets({"ARN": arn, "LastChangedDate": changed, "DeletedDate": changed + timedelta(days=3, hours=7)})
    change, params = CHANGES["restore_secret"], secret_params(arn)
    recorded = change.capture(_Clients(secrets), params)
    assert recorded["recovery_window_days"] is None and recorded["deletion_date"] == "2026-11-24T17:00:00Z"
    assert recorded["undo"] == (
        "DeleteSecret RecoveryWindowInDays=7 (Secrets Manager's minimum): the window this deletion was scheduled "
        "with cannot be told from DescribeSecret, so the deletion is scheduled 7 days after the undo, not on "
        "2026-11-24T17:00:00Z"
    )
    secrets.described = {"ARN": arn, "LastChangedDate": changed}
    said = change.restore(_Clients(secrets), params, recorded)
    assert secrets.deleted == [(arn, 7)] and said.endswith("in 7 days (the minimum: its window was not known)")


# -- verification -----------------------------------------------------------------------------------------
def burst(*samples: dict) -> HealthReport:
    parsed = [InvocationSample.model_validate(s) for s in samples]
    return HealthReport(
        source="test_burst",
        invocations=len(parsed),
        errors=sum(s.status != "succeeded" for s in parsed),
        samples=parsed,
    )


OK = {"status": "succeeded"}
SECRET_GONE = {
    "status": "failed",
    "error_type": "InvalidRequestException",
    "error_message": "You can't perform this operation on the secret because it was marked for deletion.",
}
NO_SPACE = {"status": "failed", "error_type": "OSError", "error_message": "[Errno 28] No space left on device"}


@pytest.mark.parametrize(
    "kind, fault, detail",
    [
        ("secret", "dependency_missing", "secret {secret} as in the baseline"),
        ("queue", "event_source_misconfigured", "the visibility timeout of {queue} as in the baseline"),
        ("storage", "storage_exhaustion", "ephemeral_storage as in the baseline"),
    ],
)
def test_each_restore_verifies_against_the_baseline_and_not_once_the_fault_is_back(world, kind, fault, detail):
    incident, actions, result = applied(world, kind)
    out = run_verify(world.clients, incident, actions, result, [fault], burst(OK, OK, OK))
    (check,) = out.checks
    assert (out.outcome, check.configuration, check.health, out.needs_person) == ("VERIFIED", "restored", "healthy", [])
    assert check.detail.startswith(detail.format(secret=world.secret_arn, queue=world.queue_arn))

    CASES[kind]["fault"](world)  # the fault back again: the configuration differs and it is not fixed
    out = run_verify(world.clients, incident, actions, result, [fault], burst(OK, OK, OK))
    assert (out.outcome, out.checks[0].configuration) == ("NOT_FIXED", "differs")


@pytest.mark.parametrize(
    "kind, fault, sample",
    [("secret", "dependency_missing", SECRET_GONE), ("storage", "storage_exhaustion", NO_SPACE)],
)
def test_a_restore_whose_symptom_is_still_seen_is_not_fixed(world, kind, fault, sample):
    assert symptom_of(InvocationSample.model_validate(sample)) == fault
    incident, actions, result = applied(world, kind)
    out = run_verify(world.clients, incident, actions, result, [fault], burst(sample, OK))
    (check,) = out.checks
    assert (out.outcome, check.configuration, check.health) == ("NOT_FIXED", "restored", "unhealthy")
    assert sample["error_type"] in check.detail
