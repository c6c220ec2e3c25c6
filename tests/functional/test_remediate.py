"""REMEDIATING and ROLLING_BACK against the lab: approved actions applied with their prior state recorded,
retries that repeat nothing, the first failure stopping the rest, and undo to the exact prior state.

One sample account per module (creating it is the slow part); every test starts from its baseline.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from botocore.exceptions import ClientError

from incident_responder.account.baseline import load_baseline, record_baseline
from incident_responder.account.drift import diff_configurations
from incident_responder.account.state import read_function_configuration, read_reserved_concurrency
from incident_responder.actions.concurrency import _Concurrency
from incident_responder.actions.iam import get_iam_restore_info
from incident_responder.core.contracts import (
    ProposalSubmission,
    RemediationAction,
    actions_digest,
)
from incident_responder.lab.engine import wait_for_execution
from incident_responder.remediation import lease as leases
from incident_responder.remediation import remediate
from incident_responder.remediation.errors import (
    ApprovalMismatchError,
    InvalidRemediationInputError,
    ResourceLeaseHeldError,
)
from incident_responder.state import keys
from tests.remediation_world import (
    FN,
    RESOURCE,
    ROLE,
    TABLE,
    approval,
    at_baseline,
    counting,
    inject,
    lambda_context,
    ledger_item,
    module_account,
    new_incident,
    prior,
    restore_actions,
    run_apply,
    twin_function,
    writes,
)

# -- the module's account, put back to its baseline before every test ---------------------------------


account = module_account()


@pytest.fixture
def env(account, monkeypatch, tmp_path):
    """The module's account at its baseline, with fresh chaos state; failures cleared afterwards."""
    yield at_baseline(account, monkeypatch, tmp_path)
    account.lab.clear_failures()


# -- helpers ------------------------------------------------------------------------------------------


# -- apply --------------------------------------------------------------------------------------------
def test_every_action_type_applies_with_its_exact_prior_state_recorded(env):
    clients, sample = env.clients, env.sample
    iam = clients.get("iam")
    # A managed policy attached in the baseline, then detached with the rest of the faults.
    arn = iam.create_policy(
        PolicyName="orders-read",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Action": ["sqs:ReceiveMessage", "sqs:DeleteMessage"], "Resource": "*"}
                ],
            }
        ),
    )["Policy"]["Arn"]
    iam.attach_role_policy(RoleName=ROLE, PolicyArn=arn)
    baseline = record_baseline(clients, FN)  # for this test; the next one starts from the module's again
    iam.detach_role_policy(RoleName=ROLE, PolicyArn=arn)
    inject(
        clients,
        ("iam_revoke", {"target": "s3"}),
        ("throttle", {"reserved_concurrency": 0}),
        ("network_block", {}),
        ("timeout", {"seconds": 1}),
        ("memory", {"mb": 128}),
    )
    before = read_function_configuration(clients, FN)
    actions = restore_actions(clients, "iam", "concurrency", "network", "config")
    assert [a.action_type.value for a in actions] == [
        "restore_iam_policy",
        "restore_iam_policy",
        "update_concurrency",
        "restore_network_egress",
        "restore_network_egress",
        "update_function_configuration",
        "update_function_configuration",
    ]
    incident = new_incident()
    result = run_apply(clients, incident, actions)

    assert result.outcome == "APPLIED" and result.failed_step is None and result.error is None
    assert [s.status for s in result.steps] == ["applied"] * 7
    assert diff_configurations(baseline.configuration, read_function_configuration(clients, FN)) == []
    # The prior state, exactly as it was before each action.
    assert prior(clients, incident, 1) == {
        "role_name": ROLE,
        "policy_name": "s3-access",
        "absent": True,
        "policy_document": None,
    }
    assert prior(clients, incident, 2) == {"role_name": ROLE, "policy_arn": arn, "attached": False}
    assert prior(clients, incident, 3) == {"function_name": FN, "reserved_concurrent_executions": 0}
    (acl,) = {s.network_acl_id for s in before.network.subnets}
    deny = next(e for e in before.network.subnets[0].entries if e["RuleNumber"] == 1)
    assert prior(clients, incident, 4) == {
        "security_group_id": sample.security_group_id,
        "already_present": [],
        "nacl_entries": [],
    }
    assert prior(clients, incident, 5) == {
        "security_group_id": None,
        "already_present": [],
        "nacl_entries": [{"NetworkAclId": acl, **deny}],
    }
    assert prior(clients, incident, 6) == {"function_name": FN, "Timeout": 1}
    assert prior(clients, incident, 7) == {"function_name": FN, "MemorySize": 128}
    # The ledger: progress and times, a TTL, and never a status attribute (the sweep scans it).
    item = ledger_item(clients, incident, 3)
    assert item["progress"]["S"] == "applied" and item["applied_at"]["S"] and item["recorded_at"]["S"]
    assert RemediationAction.model_validate_json(item["action_json"]["S"]) == actions[2]
    assert int(item["expires_at"]["N"]) > datetime.now(UTC).timestamp() + 6 * 86400
    assert "status" not in item
    head = clients.get("dynamodb").get_item(
        TableName=TABLE, Key={"incident_id": {"S": keys.ledger_head(incident.incident_id)}}
    )["Item"]
    assert head["actions_digest"]["S"] == actions_digest(actions) and "status" not in head
    # The dump is the handler's output as the spec gives it.
    assert set(result.model_dump(mode="json")) == {
        "outcome",
        "steps",
        "failed_step",
        "error",
        "finished_at",
        "resources",
    }
    # Every resource the actions change was leased, and each step keeps the fencing token it wrote under.
    assert result.resources == [
        f"function:{FN}",
        f"network-acl:{acl}",
        f"role:{ROLE}",
        f"security-group:{sample.security_group_id}",
    ]
    assert json.loads(item["fences_json"]["S"]) == {f"function:{FN}": 1}


def test_a_retried_apply_repeats_nothing_and_a_recorded_step_is_applied_again_safely(env):
    clients = env.clients
    inject(clients, ("throttle", {"reserved_concurrency": 0}), ("network_block", {}))
    actions = restore_actions(clients, "concurrency", "network")
    incident = new_incident()
    first = run_apply(clients, incident, actions)
    assert first.outcome == "APPLIED"
    stamps = {o: ledger_item(clients, incident, o)["applied_at"]["S"] for o in (1, 2, 3)}

    with counting(clients, "lambda", "ec2", "iam") as calls:
        again = run_apply(clients, incident, actions)
    assert again.outcome == "APPLIED" and [s.status for s in again.steps] == ["already_applied"] * 3
    assert writes(calls) == {}
    assert {o: ledger_item(clients, incident, o)["applied_at"]["S"] for o in (1, 2, 3)} == stamps

    # A task that died after recording but before marking: the steps run again, their prior state stays.
    recorded = {o: prior(clients, incident, o) for o in (1, 2, 3)}
    for order in (1, 2, 3):
        clients.get("dynamodb").update_item(
            TableName=TABLE,
            Key={"incident_id": {"S": keys.ledger_step(incident.incident_id, order)}},
            UpdateExpression="SET progress = :p",
            ExpressionAttributeValues={":p": {"S": "recorded"}},
        )
    with counting(clients, "lambda", "ec2") as calls:
        retried = run_apply(clients, incident, actions)
    assert retried.outcome == "APPLIED" and [s.status for s in retried.steps] == ["applied"] * 3
    # The egress grant exists and the NACL entry is gone already: nothing is authorized or deleted twice.
    assert writes(calls) == {"PutFunctionConcurrency": 1}
    assert {o: prior(clients, incident, o) for o in (1, 2, 3)} == recorded
    assert diff_configurations(env.baseline.configuration, read_function_configuration(clients, FN)) == []


def test_actions_that_are_not_the_approved_ones_apply_nothing(env):
    clients = env.clients
    inject(clients, ("throttle", {"reserved_concurrency": 0}))
    actions = restore_actions(clients, "concurrency")
    other = [
        actions[0].model_copy(update={"parameters": {**actions[0].parameters, "reserved_concurrent_executions": 50}})
    ]
    digest = actions_digest(actions)
    cases = {
        "event digest of other actions": {"actions_digest": actions_digest(other)},
        "approval of other actions": {"approval": approval(other)},
        "actions changed after approval": {"actions": other, "actions_digest": digest},
        "a rejection": {"approval": approval(actions, decision="reject")},
        "no approval": {"approval": None},
    }
    incident = new_incident()
    for name, overrides in cases.items():
        with pytest.raises(ApprovalMismatchError):
            run_apply(clients, incident, actions, **overrides)
        assert read_reserved_concurrency(clients, FN) == 0, name
    assert ledger_item(clients, incident, 1) is None
    with pytest.raises(InvalidRemediationInputError):
        run_apply(clients, incident, actions, actions=[{"action_type": "delete_everything"}])
    with pytest.raises(InvalidRemediationInputError):
        run_apply(clients, incident, actions, actions=actions + actions)


def test_the_guardrails_run_again_and_refuse_what_is_no_restore(env):
    clients = env.clients
    inject(clients, ("throttle", {"reserved_concurrency": 0}))
    (action,) = restore_actions(clients, "concurrency")
    # An action on another function is refused whatever its approval says, before anything is read of it.
    elsewhere = action.model_copy(
        update={"parameters": {"function_name": "billing", "reserved_concurrent_executions": 10}}
    )
    incident = new_incident()
    result = run_apply(clients, incident, [elsewhere])
    assert result.outcome == "FAILED" and "not the incident's function" in result.error
    assert ledger_item(clients, incident, 1) is None
    # So is a value that is not the baseline's, even one the account already has.
    clients.get("lambda").put_function_concurrency(FunctionName=FN, ReservedConcurrentExecutions=7)
    other = action.model_copy(update={"parameters": {"function_name": FN, "reserved_concurrent_executions": 7}})
    result = run_apply(clients, new_incident(), [other])
    assert result.outcome == "FAILED" and "must equal the baseline" in result.error


def test_a_step_another_incident_already_restored_is_said_so_and_the_rest_proceed(env):
    """Defect: a second incident on a fault the first already partly fixed had its first step refused as "nothing
    to restore", so its still-needed steps never ran (the function stayed throttled), and the rollback notice
    said "Undone" for steps never applied."""
    clients = env.clients
    inject(clients, ("timeout", {"seconds": 1}), ("throttle", {"reserved_concurrency": 0}))
    actions = restore_actions(clients, "config", "concurrency")
    assert [a.action_type.value for a in actions] == ["update_concurrency", "update_function_configuration"]
    # The first incident fixed the concurrency and ended; the timeout is still too low.
    clients.get("lambda").put_function_concurrency(FunctionName=FN, ReservedConcurrentExecutions=10)
    incident = new_incident()
    with counting(clients, "lambda") as calls:
        result = run_apply(clients, incident, actions)
    assert result.outcome == "APPLIED", result.error
    assert [(s.status, s.action_type) for s in result.steps] == [
        ("already_restored", "update_concurrency"),
        ("applied", "update_function_configuration"),
    ]
    assert writes(calls) == {"UpdateFunctionConfiguration": 1}
    assert clients.get("lambda").get_function_configuration(FunctionName=FN)["Timeout"] == 30
    assert [s.execution_order for s in result.applied] == [1, 2]  # verification checks both
    # Nothing was written for the first step: there is nothing of it to undo, and the rollback says so.
    assert ledger_item(clients, incident, 1) is None
    undo = remediate.rollback(clients, table=TABLE, incident=incident, reason="NOT_FIXED")
    assert [(s.execution_order, s.status) for s in undo.steps] == [(2, "undone")]
    config_now = clients.get("lambda").get_function_configuration(FunctionName=FN)
    assert (read_reserved_concurrency(clients, FN), config_now["Timeout"]) == (10, 1)


def test_a_failure_on_the_second_action_stops_there_and_rollback_undoes_the_first(env):
    clients, lab = env.clients, env.lab
    inject(
        clients,
        ("throttle", {"reserved_concurrency": 0}),
        ("timeout", {"seconds": 1}),
        ("memory", {"mb": 128}),
    )
    actions = restore_actions(clients, "concurrency", "config")
    assert [a.action_type.value for a in actions] == [
        "update_concurrency",
        "update_function_configuration",
        "update_function_configuration",
    ]
    lab.fail_requests(
        "UpdateFunctionConfiguration",
        service="lambda",
        code="ResourceConflictException",
        status=409,
        message="An update is in progress",
    )
    incident = new_incident()
    result = run_apply(clients, incident, actions)
    assert result.outcome == "FAILED" and result.failed_step == 2
    assert [s.status for s in result.steps] == ["applied", "failed", "not_attempted"]
    assert result.error == "step 2 (update_function_configuration): ResourceConflictException: An update is in progress"
    assert lab.failed_requests[-1] == "lambda:UpdateFunctionConfiguration"
    config = clients.get("lambda").get_function_configuration(FunctionName=FN)
    assert (read_reserved_concurrency(clients, FN), config["Timeout"], config["MemorySize"]) == (10, 1, 128)
    step2 = ledger_item(clients, incident, 2)
    assert step2["progress"]["S"] == "failed" and "ResourceConflictException" in step2["error"]["S"]
    assert ledger_item(clients, incident, 3) is None

    undo = remediate.rollback(clients, table=TABLE, incident=incident, reason=result.error)
    assert undo.outcome == "ROLLED_BACK" and undo.error is None
    assert [(s.execution_order, s.status) for s in undo.steps] == [(2, "not_applied"), (1, "undone")]
    assert undo.steps[0].detail.startswith("never applied (ResourceConflictException")
    assert read_reserved_concurrency(clients, FN) == 0
    assert set(undo.model_dump(mode="json")) == {"outcome", "steps", "error"}


def test_rollback_restores_the_exact_prior_state_in_reverse_order_and_is_idempotent(env):
    clients = env.clients
    iam = clients.get("iam")
    inject(clients, ("iam_revoke", {"target": "s3"}), ("network_block", {}), ("throttle", {"reserved_concurrency": 0}))
    # A modified policy too: its exact document must come back, not the baseline's.
    logs_doc = load_baseline(clients, FN).configuration.role.inline_policies["cloudwatch-logs"]
    modified = {**logs_doc, "Statement": [{**logs_doc["Statement"][0], "Action": ["logs:CreateLogGroup"]}]}
    iam.put_role_policy(RoleName=ROLE, PolicyName="cloudwatch-logs", PolicyDocument=json.dumps(modified))
    faulted = read_function_configuration(clients, FN)
    actions = restore_actions(clients, "iam", "concurrency", "network")
    incident = new_incident()
    assert run_apply(clients, incident, actions).outcome == "APPLIED"
    assert diff_configurations(env.baseline.configuration, read_function_configuration(clients, FN)) == []

    undo = remediate.rollback(clients, table=TABLE, incident=incident, reason="NOT_FIXED")
    assert undo.outcome == "ROLLED_BACK"
    assert [s.execution_order for s in undo.steps] == sorted((a.execution_order for a in actions), reverse=True)
    assert all(s.status == "undone" and s.detail == "restored the recorded prior state" for s in undo.steps)
    after = read_function_configuration(clients, FN)
    assert diff_configurations(faulted, after) == []
    assert "s3-access" not in after.role.inline_policies  # absent again
    assert after.role.inline_policies["cloudwatch-logs"] == modified
    assert any(e["RuleNumber"] == 1 and e["RuleAction"] == "deny" for e in after.network.subnets[0].entries)
    assert all(ledger_item(clients, incident, a.execution_order)["progress"]["S"] == "undone" for a in actions)

    with counting(clients, "lambda", "ec2", "iam") as calls:
        again = remediate.rollback(clients, table=TABLE, incident=incident, reason="NOT_FIXED")
    assert again.outcome == "ROLLED_BACK" and all(s.status == "undone" for s in again.steps)
    assert writes(calls) == {}
    # Nothing recorded (the apply never started): nothing to undo.
    assert remediate.rollback(clients, table=TABLE, incident=new_incident(), reason="x").model_dump() == {
        "outcome": "ROLLED_BACK",
        "steps": [],
        "error": None,
    }


def test_an_undo_that_fails_is_rollback_failed_the_others_still_undone_and_a_retry_finishes(env):
    clients, lab = env.clients, env.lab
    inject(clients, ("throttle", {"reserved_concurrency": 0}), ("timeout", {"seconds": 1}))
    actions = restore_actions(clients, "concurrency", "config")
    incident = new_incident()
    assert run_apply(clients, incident, actions).outcome == "APPLIED"
    lab.fail_requests("PutFunctionConcurrency", code="AccessDeniedException", status=403, message="not allowed")
    undo = remediate.rollback(clients, table=TABLE, incident=incident, reason="NOT_FIXED")
    assert undo.outcome == "ROLLBACK_FAILED"
    assert [(s.execution_order, s.status) for s in undo.steps] == [(2, "undone"), (1, "undo_failed")]
    assert undo.error == "step 1 (update_concurrency): AccessDeniedException: not allowed"
    assert ledger_item(clients, incident, 1)["progress"]["S"] == "undo_failed"
    config = clients.get("lambda").get_function_configuration(FunctionName=FN)
    assert (read_reserved_concurrency(clients, FN), config["Timeout"]) == (10, 1)

    retried = remediate.rollback(clients, table=TABLE, incident=incident, reason="NOT_FIXED")
    assert retried.outcome == "ROLLED_BACK" and read_reserved_concurrency(clients, FN) == 0


def test_an_undo_the_live_state_does_not_confirm_is_a_failure(env, monkeypatch):
    clients = env.clients
    inject(clients, ("throttle", {"reserved_concurrency": 0}))
    actions = restore_actions(clients, "concurrency")
    incident = new_incident()
    assert run_apply(clients, incident, actions).outcome == "APPLIED"
    # An undo that "succeeds" but leaves another value: the read-back catches it.
    monkeypatch.setattr(
        _Concurrency,
        "restore",
        lambda self, c, p, prior: c.get("lambda").put_function_concurrency(
            FunctionName=FN, ReservedConcurrentExecutions=3
        ),
    )
    undo = remediate.rollback(clients, table=TABLE, incident=incident, reason="NOT_FIXED")
    assert undo.outcome == "ROLLBACK_FAILED" and undo.steps[0].status == "undo_failed"
    assert "reserved_concurrent_executions: expected 0, found 3" in undo.error


# -- two incidents on one function ---------------------------------------------------------------------
def test_a_step_the_api_refused_is_never_undone_over_a_fix_made_since(env):
    """Defect: A's concurrency step failed at the API, the function was fixed since (B's REMEDIATED), then A's
    rollback wrote its recorded prior (0) over the fix: the function throttled again and A said ROLLED_BACK."""
    clients, lab = env.clients, env.lab
    inject(clients, ("throttle", {"reserved_concurrency": 0}))
    actions = restore_actions(clients, "concurrency")
    a = new_incident()
    lab.fail_requests("PutFunctionConcurrency", code="ResourceConflictException", status=409, times=1)
    assert run_apply(clients, a, actions).outcome == "FAILED"
    clients.get("lambda").put_function_concurrency(FunctionName=FN, ReservedConcurrentExecutions=10)  # the fix

    undo = remediate.rollback(clients, table=TABLE, incident=a, reason="step 1 failed")
    assert undo.outcome == "ROLLED_BACK"
    assert [(s.status, s.detail[:15]) for s in undo.steps] == [("not_applied", "never applied (")]
    assert read_reserved_concurrency(clients, FN) == 10


def test_a_rollback_leaves_a_value_changed_since_it_was_set_and_fails_so_operators_hear(env):
    clients = env.clients
    inject(clients, ("throttle", {"reserved_concurrency": 0}), ("timeout", {"seconds": 1}))
    actions = restore_actions(clients, "concurrency", "config")
    incident = new_incident()
    assert run_apply(clients, incident, actions).outcome == "APPLIED"
    clients.get("lambda").put_function_concurrency(FunctionName=FN, ReservedConcurrentExecutions=25)  # a person

    undo = remediate.rollback(clients, table=TABLE, incident=incident, reason="NOT_FIXED")
    assert undo.outcome == "ROLLBACK_FAILED"
    assert [(s.execution_order, s.status) for s in undo.steps] == [(2, "undone"), (1, "undo_failed")]
    assert "changed since this incident set it" in undo.error and "expected 10, found 25" in undo.error
    config = clients.get("lambda").get_function_configuration(FunctionName=FN)
    assert (read_reserved_concurrency(clients, FN), config["Timeout"]) == (25, 1)  # its own step undone, not the other


def test_a_step_that_may_have_run_is_left_alone_unless_it_is_at_its_prior(env):
    clients = env.clients
    inject(clients, ("throttle", {"reserved_concurrency": 0}))
    actions = restore_actions(clients, "concurrency")
    incident = new_incident()
    assert run_apply(clients, incident, actions).outcome == "APPLIED"
    # A task that died between recording and applying: nothing says whether the 10 there is this incident's.
    clients.get("dynamodb").update_item(
        TableName=TABLE,
        Key={"incident_id": {"S": keys.ledger_step(incident.incident_id, 1)}},
        UpdateExpression="SET progress = :p REMOVE after_json",
        ExpressionAttributeValues={":p": {"S": "recorded"}},
    )
    undo = remediate.rollback(clients, table=TABLE, incident=incident, reason="x")
    assert undo.outcome == "ROLLBACK_FAILED" and "cannot tell whether this incident changed it" in undo.error
    assert read_reserved_concurrency(clients, FN) == 10


def test_one_incident_at_a_time_per_resource(env):
    """Defect: nothing stopped two remediations from changing one function at once."""
    clients = env.clients
    inject(clients, ("throttle", {"reserved_concurrency": 0}))
    actions = restore_actions(clients, "concurrency")
    a, b = new_incident(), new_incident()
    assert run_apply(clients, a, actions).outcome == "APPLIED"
    with counting(clients, "lambda") as calls, pytest.raises(ResourceLeaseHeldError) as held:
        run_apply(clients, b, actions)
    assert f"incident {a.incident_id} is remediating {RESOURCE}" in str(held.value)
    assert writes(calls) == {} and ledger_item(clients, b, 1) is None
    assert run_apply(clients, a, actions).outcome == "APPLIED"  # a retried task of the holder goes on
    assert leases.holder(clients, TABLE, RESOURCE)["holder"] == a.incident_id

    assert remediate.rollback(clients, table=TABLE, incident=a, reason="NOT_FIXED").outcome == "ROLLED_BACK"
    assert leases.holder(clients, TABLE, RESOURCE) is None  # released after rolling back
    assert read_reserved_concurrency(clients, FN) == 0
    assert run_apply(clients, b, actions).outcome == "APPLIED"
    assert leases.release(clients, TABLE, RESOURCE, a.incident_id) is False  # not A's to give back now
    assert remediate.release(clients, table=TABLE, incident=b) == [RESOURCE]


def test_a_lease_whose_holder_died_runs_out(env):
    clients = env.clients
    leases.take(clients, TABLE, RESOURCE, "inc-dead", seconds=-1)
    inject(clients, ("throttle", {"reserved_concurrency": 0}))
    incident = new_incident()
    assert run_apply(clients, incident, restore_actions(clients, "concurrency")).outcome == "APPLIED"
    assert leases.holder(clients, TABLE, RESOURCE)["holder"] == incident.incident_id


# -- incidents that overlap: leases per resource, fencing tokens -----------------------------------------
def lapse(clients, resource: str) -> None:
    """The lease's time runs out (its 30 minutes) while its holder, tied to no execution here, may still act."""
    clients.get("dynamodb").update_item(
        TableName=TABLE,
        Key=leases.lease_key(resource),
        UpdateExpression="SET lease_until = :past",
        ExpressionAttributeValues={":past": {"N": "1"}},
    )


def test_an_undo_older_than_the_resources_latest_lease_is_refused_never_applied(env):
    """Defect (harmful): A's lease lapsed while A still ran; B took it, restored the same value and verified; A's
    rollback then undid B's verified fix (its compare-and-swap passed: the live value was the one A set too)."""
    clients = env.clients
    inject(clients, ("throttle", {"reserved_concurrency": 0}))
    actions = restore_actions(clients, "concurrency")
    a, b = new_incident(), new_incident()
    assert run_apply(clients, a, actions).outcome == "APPLIED"
    lapse(clients, RESOURCE)
    clients.get("lambda").put_function_concurrency(FunctionName=FN, ReservedConcurrentExecutions=0)  # it recurs
    assert run_apply(clients, b, actions).outcome == "APPLIED"  # B takes the lease over: a newer token
    assert leases.fence(clients, TABLE, RESOURCE) == 2
    assert remediate.release(clients, table=TABLE, incident=b) == [RESOURCE]  # B verified: REMEDIATED
    with counting(clients, "lambda") as calls:
        undo = remediate.rollback(clients, table=TABLE, incident=a, reason="NOT_FIXED")
    assert undo.outcome == "ROLLBACK_FAILED" and writes(calls) == {}
    assert f"fenced: {RESOURCE} passed to a newer holder (fencing token 2)" in undo.error
    assert read_reserved_concurrency(clients, FN) == 10  # B's verified fix stands; the operators are alarmed
    assert json.loads(ledger_item(clients, a, 1)["fences_json"]["S"]) == {RESOURCE: 1}
    assert ledger_item(clients, a, 1)["progress"]["S"] == "undo_failed"


def test_a_write_under_a_lease_another_incident_took_is_refused(env):
    clients = env.clients
    inject(clients, ("throttle", {"reserved_concurrency": 0}), ("timeout", {"seconds": 1}))
    actions = restore_actions(clients, "concurrency")
    a = new_incident()
    leases.take(clients, TABLE, RESOURCE, a.incident_id)
    lapse(clients, RESOURCE)
    leases.take(clients, TABLE, RESOURCE, "inc-newer")  # between A's take and A's write
    with pytest.raises(leases.FencedError):
        leases.check(clients, TABLE, RESOURCE, a.incident_id, 1)
    with pytest.raises(ResourceLeaseHeldError):  # and a fresh apply of A waits like anyone else's
        run_apply(clients, a, actions)
    assert read_reserved_concurrency(clients, FN) == 0


def test_a_ledger_that_cannot_be_opened_leaves_nothing_leased(env):
    """The ledger's head names the resources before any is leased, so every end can give them back: an apply whose
    head cannot be written holds nothing (leased first, the resources stayed with an execution that then failed)."""
    clients, lab = env.clients, env.lab
    inject(clients, ("throttle", {"reserved_concurrency": 0}))
    actions = restore_actions(clients, "concurrency")
    lab.fail_requests("PutItem", service="dynamodb", code="ResourceNotFoundException", status=400, times=1)
    with pytest.raises(ClientError):
        run_apply(clients, new_incident(), actions)
    assert leases.holder(clients, TABLE, RESOURCE) is None and read_reserved_concurrency(clients, FN) == 0


def running_execution(clients) -> str:
    """An execution that runs until stopped (a Wait of an hour), to hold leases as an incident's does."""
    sfn = clients.get("stepfunctions")
    definition = {"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": 3600, "End": True}}}
    arn = sfn.create_state_machine(
        name=f"holder-{uuid.uuid4().hex[:8]}",
        definition=json.dumps(definition),
        roleArn="arn:aws:iam::123456789012:role/holder",
    )["stateMachineArn"]
    return sfn.start_execution(stateMachineArn=arn, name="holder")["executionArn"]


def test_a_lease_never_lapses_under_a_live_execution(env):
    """Defect (harmful): the lease ran out after 30 minutes whoever still held it."""
    clients = env.clients
    inject(clients, ("throttle", {"reserved_concurrency": 0}))
    actions = restore_actions(clients, "concurrency")
    execution = running_execution(clients)
    a, b = new_incident(), new_incident()
    assert run_apply(clients, a, actions, execution_arn=execution).outcome == "APPLIED"
    lapse(clients, RESOURCE)
    with pytest.raises(ResourceLeaseHeldError):  # its time is up, but its execution still runs
        run_apply(clients, b, actions)
    assert leases.holder(clients, TABLE, RESOURCE)["execution"] == execution
    clients.get("stepfunctions").stop_execution(executionArn=execution)
    # moto stops an execution in its worker thread: once it says so (Step Functions' StopExecution returns then).
    assert wait_for_execution(clients.get("stepfunctions"), execution)["status"] == "ABORTED"
    assert leases.holder(clients, TABLE, RESOURCE) is None  # an ended execution holds nothing
    result = run_apply(clients, b, actions)
    assert [s.status for s in result.steps] == ["already_restored"]
    assert leases.holder(clients, TABLE, RESOURCE)["holder"] == b.incident_id
    assert leases.fence(clients, TABLE, RESOURCE) == 2


def test_two_functions_sharing_a_role_take_turns_on_it(env):
    """Defect (harmful): leases were per function; incidents on two functions sharing one role both restored its
    policy, and the first one's rollback deleted what the second had restored and verified."""
    clients = env.clients
    twin = twin_function(clients)
    inject(clients, ("iam_revoke", {"target": "s3"}))
    ours = restore_actions(clients, "iam")
    theirs = ProposalSubmission(actions=get_iam_restore_info(clients, twin).actions).to_proposal("i-2").actions
    assert [a.target_resource for a in theirs] == [a.target_resource for a in ours]
    a = new_incident()
    b = new_incident().model_copy(update={"function_name": twin})
    assert run_apply(clients, a, ours).outcome == "APPLIED"
    clients.get("iam").delete_role_policy(RoleName=ROLE, PolicyName="s3-access")  # it recurs
    with pytest.raises(ResourceLeaseHeldError) as held:  # the role is A's until A ends
        run_apply(clients, b, theirs)
    assert f"role:{ROLE}" in str(held.value) and ledger_item(clients, b, 1) is None
    assert remediate.rollback(clients, table=TABLE, incident=a, reason="NOT_FIXED").outcome == "ROLLED_BACK"
    assert run_apply(clients, b, theirs).outcome == "APPLIED"
    # A's rollback, run again (a retried task), undoes nothing of B's.
    assert remediate.rollback(clients, table=TABLE, incident=a, reason="NOT_FIXED").outcome == "ROLLED_BACK"
    assert "s3-access" in clients.get("iam").list_role_policies(RoleName=ROLE)["PolicyNames"]
    remediate.release(clients, table=TABLE, incident=b)


# -- the handler --------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:No application metrics to publish")
def test_the_remediate_handler_applies_and_rolls_back(env, monkeypatch, capsys):
    from handlers import remediate as remediate_handler

    monkeypatch.setenv("INCIDENT_STATE_TABLE", TABLE)
    monkeypatch.setenv("BASELINE_TABLE", "incident-baselines")
    monkeypatch.setenv("INCIDENT_TTL_DAYS", "7")
    clients = env.clients
    inject(clients, ("throttle", {"reserved_concurrency": 0}))
    actions = [a.model_dump(mode="json") for a in restore_actions(clients, "concurrency")]
    incident = new_incident().model_dump(mode="json")
    event = {
        "operation": "apply",
        "incident": incident,
        "actions": actions,
        "actions_digest": actions_digest(actions),
        "approval": approval(actions).model_dump(mode="json"),
    }
    out = remediate_handler.handler(event, lambda_context("remediate"))
    assert out["outcome"] == "APPLIED" and out["steps"][0]["status"] == "applied" and out["finished_at"]
    back = remediate_handler.handler(
        {"operation": "rollback", "incident": incident, "reason": "NOT_FIXED"}, lambda_context("remediate")
    )
    assert back == {"outcome": "ROLLED_BACK", "steps": back["steps"], "error": None}
    assert read_reserved_concurrency(clients, FN) == 0
    logged = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    metrics = [line for line in logged if line.get("_aws")]
    assert {m for line in metrics for m in line if m in ("ActionsApplied", "ActionsUndone")} == {
        "ActionsApplied",
        "ActionsUndone",
    }
    for bad in (
        {"incident": incident},
        {"operation": "delete", "incident": incident},
        {"operation": "apply", "incident": incident},
    ):
        with pytest.raises(InvalidRemediationInputError):
            remediate_handler.handler(bad, lambda_context("remediate"))


# -- the lab's failure seam ---------------------------------------------------------------------------
def test_the_lab_fails_chosen_requests_of_every_protocol(env):
    from botocore.exceptions import ClientError

    clients, lab = env.clients, env.lab
    # Codes botocore does not retry: a retried attempt would use up a failure and then pass.
    lab.fail_requests("PutFunctionConcurrency", code="ResourceConflictException", status=409, times=1)
    lab.fail_requests("GetRolePolicy", code="NoSuchEntity", status=404, times=2)
    lab.fail_requests("DescribeSecurityGroups", code="UnauthorizedOperation", status=403)
    lab.fail_requests("GetItem", service="dynamodb", code="ResourceNotFoundException", status=400)
    calls = {
        "lambda": lambda: clients.get("lambda").get_function_concurrency(FunctionName=FN),
        "lambda-put": lambda: clients.get("lambda").put_function_concurrency(
            FunctionName=FN, ReservedConcurrentExecutions=10
        ),
        "iam": lambda: clients.get("iam").get_role_policy(RoleName=ROLE, PolicyName="s3-access"),
        "ec2": lambda: clients.get("ec2").describe_security_groups(GroupIds=[env.sample.security_group_id]),
        "dynamodb": lambda: clients.get("dynamodb").get_item(TableName=TABLE, Key={"incident_id": {"S": "x"}}),
    }
    calls["lambda"]()  # another operation on the same route family passes
    codes = []
    for name in ("lambda-put", "iam", "iam", "ec2", "dynamodb"):
        with pytest.raises(ClientError) as caught:
            calls[name]()
        codes.append(caught.value.response["Error"]["Code"])
    assert codes == [
        "ResourceConflictException",
        "NoSuchEntity",
        "NoSuchEntity",
        "UnauthorizedOperation",
        "ResourceNotFoundException",
    ]
    for call in calls.values():  # each failure used up: everything passes again
        call()
    assert lab.failed_requests[-5:] == [
        "lambda:PutFunctionConcurrency",
        "iam:GetRolePolicy",
        "iam:GetRolePolicy",
        "ec2:DescribeSecurityGroups",
        "dynamodb:GetItem",
    ]
    lab.fail_requests("GetFunctionConcurrency", times=5)
    lab.clear_failures()
    calls["lambda"]()
