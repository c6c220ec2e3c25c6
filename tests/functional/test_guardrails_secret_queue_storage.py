"""The lookups and guardrails of the failure catalogue's three restores, against the lab: a secret the function's
environment names scheduled for deletion (restore_secret), the visibility timeout of the queue its mapping reads
lowered (restore_queue_attributes), its ephemeral storage shrunk (update_function_configuration with
ephemeral_storage). Each lookup proposes exactly the baseline restore from a real difference and the guardrails keep
it; another secret or queue, a value that is not the baseline's, a secret not scheduled for deletion are rejected.

One account per module (the functions, a secret, two queues, all onboarded); every test starts from its baseline.
"""

from __future__ import annotations

from typing import Any

import pytest

from incident_responder.account.baseline import load_baseline, record_baseline
from incident_responder.account.drift import diff_configurations
from incident_responder.account.state import read_function_configuration
from incident_responder.actions.function_configuration import get_function_config_restore_info
from incident_responder.actions.queue import get_queue_restore_info
from incident_responder.actions.registry import RISK_FOR_ACTION
from incident_responder.actions.secret import get_secret_restore_info
from incident_responder.core.contracts import ActionVerdict, ProposalSubmission, RemediationAction
from incident_responder.guardrails.checks import check_action, drift_paths
from incident_responder.review.policy import apply_review_policy
from tests.catalogue_account import (
    CONSUMER,
    FUNCTION_TIMEOUT,
    ORDERS,
    PROCESSOR,
    SECRET,
    TMP_MB,
    VISIBILITY,
    Catalogue,
    catalogue_account,
    create_secret,
)
from tests.fakes import guard


@pytest.fixture(scope="module")
def account(lab, _lab_clients):
    with catalogue_account(lab, _lab_clients) as ready:
        yield ready


@pytest.fixture
def world(account):
    account.reset()
    yield account
    account.reset()


# -- the actions as a model would submit them -------------------------------------------------------------
def restore_secret(secret_arn: str, target: str | None = None) -> dict[str, Any]:
    return {
        "fault_type": "dependency_missing",
        "action_type": "restore_secret",
        "target_resource": target or secret_arn,
        "parameters": {"secret_arn": secret_arn},
    }


def restore_queue(queue_arn: str, seconds: int = VISIBILITY, target: str | None = None) -> dict[str, Any]:
    return {
        "fault_type": "event_source_misconfigured",
        "action_type": "restore_queue_attributes",
        "target_resource": target or queue_arn,
        "parameters": {"queue_arn": queue_arn, "visibility_timeout": seconds},
    }


def restore_tmp(mb: int = TMP_MB, function: str = PROCESSOR, fault: str = "storage_exhaustion", **more: Any):
    return {
        "fault_type": fault,
        "action_type": "update_function_configuration",
        "target_resource": function,
        "parameters": {"function_name": function, "ephemeral_storage": mb, **more},
    }


def reasons_of(checked) -> list[str]:
    (rejected,) = checked.rejected_actions
    return rejected.reasons


def submitted(info) -> list[dict]:
    """The lookup's ready-made actions as a model would submit them (through the submit_proposal schema)."""
    submission = ProposalSubmission.model_validate({"actions": [a.model_dump(mode="json") for a in info.actions]})
    return [a.model_dump(mode="json") for a in submission.actions]


# -- what the baseline records ------------------------------------------------------------------------------
def test_the_baseline_records_the_secret_the_queue_visibility_and_the_ephemeral_storage(world):
    (secret,) = load_baseline(world.clients, ORDERS).configuration.secrets
    assert (secret.secret_arn, secret.variable, secret.exists, secret.deleted_date) == (
        world.secret_arn,
        "PAYMENT_SECRET_ARN",
        True,
        None,
    )
    (mapping,) = load_baseline(world.clients, CONSUMER).configuration.event_source_mappings
    assert (mapping.event_source_arn, mapping.queue_visibility_timeout) == (world.queue_arn, VISIBILITY)
    assert load_baseline(world.clients, PROCESSOR).configuration.ephemeral_storage == TMP_MB


# -- lookups: a real difference, and the exact baseline restore ------------------------------------------------
def test_secret_lookup_cancels_the_scheduled_deletion_of_the_functions_own_secret(world):
    quiet = get_secret_restore_info(world.clients, ORDERS)
    assert (quiet.drifted, quiet.actions, quiet.secrets, quiet.error) == (False, [], [], None)

    world.schedule_deletion()
    world.schedule_deletion(world.other_secret_arn)  # someone else's secret: nothing the function names
    info = get_secret_restore_info(world.clients, ORDERS)
    assert info.drifted and info.error is None and info.not_in_baseline == []
    (secret,) = info.secrets
    assert (secret.secret_arn, secret.variable, secret.current_state, secret.baseline_state, secret.refused) == (
        world.secret_arn,
        "PAYMENT_SECRET_ARN",
        "scheduled_for_deletion",
        "available",
        None,
    )
    assert secret.deleted_date
    (action,) = info.actions
    assert (action.fault_type, action.action_type, action.target_resource) == (
        "dependency_missing",
        "restore_secret",
        world.secret_arn,
    )
    assert action.parameters.model_dump() == {"secret_arn": world.secret_arn}
    checked = guard(world.clients, *submitted(info), function=ORDERS)
    assert checked.rejected_actions == []
    # Someone may have scheduled it on purpose (a leaked credential): a person always decides.
    assert [(a.risk_level, a.requires_approval) for a in checked.actions] == [("high", True)]


def test_queue_lookup_puts_back_the_baseline_visibility_timeout_of_the_functions_own_queue(world):
    assert get_queue_restore_info(world.clients, CONSUMER).actions == []
    world.set_visibility(10)
    world.set_visibility(5, world.other_queue_url)  # a queue the function does not read
    info = get_queue_restore_info(world.clients, CONSUMER)
    (queue,) = info.queues
    assert (
        queue.uuid,
        queue.queue_arn,
        queue.current_visibility_timeout,
        queue.baseline_visibility_timeout,
        queue.function_timeout,
        queue.refused,
    ) == (world.mapping_uuid, world.queue_arn, 10, VISIBILITY, FUNCTION_TIMEOUT, None)
    (action,) = info.actions
    assert (action.fault_type, action.action_type, action.target_resource) == (
        "event_source_misconfigured",
        "restore_queue_attributes",
        world.queue_arn,
    )
    assert action.parameters.model_dump() == {"queue_arn": world.queue_arn, "visibility_timeout": VISIBILITY}
    checked = guard(world.clients, *submitted(info), function=CONSUMER)
    assert [(a.risk_level, a.requires_approval) for a in checked.actions] == [("medium", True)]
    # The function without a mapping has no queue to speak of.
    assert get_queue_restore_info(world.clients, ORDERS).model_dump(include={"drifted", "queues", "actions"}) == {
        "drifted": False,
        "queues": [],
        "actions": [],
    }


def test_function_config_lookup_restores_ephemeral_storage_only_below_the_baseline(world):
    quiet = get_function_config_restore_info(world.clients, PROCESSOR)
    assert (quiet.current_ephemeral_storage, quiet.baseline_ephemeral_storage, quiet.actions) == (TMP_MB, TMP_MB, [])

    world.set_tmp(512)
    info = get_function_config_restore_info(world.clients, PROCESSOR)
    assert info.changes == {"EphemeralStorage": {"Size": TMP_MB}} and info.refused == []
    (action,) = info.actions
    assert (action.fault_type, action.action_type) == ("storage_exhaustion", "update_function_configuration")
    assert action.parameters.model_dump(exclude_none=True) == {"function_name": PROCESSOR, "ephemeral_storage": TMP_MB}
    checked = guard(world.clients, *submitted(info), function=PROCESSOR)
    assert [(a.risk_level, a.requires_approval) for a in checked.actions] == [("low", False)]

    # A larger /tmp exhausts nothing: reported, never shrunk back.
    world.set_tmp(2048)
    info = get_function_config_restore_info(world.clients, PROCESSOR)
    assert info.actions == [] and info.changes == {}
    assert "more than the baseline's 1024 MB" in info.refused[0]
    reasons = reasons_of(guard(world.clients, restore_tmp(), function=PROCESSOR))
    assert any("more than the baseline's 1024 MB" in r for r in reasons), reasons


def test_a_secret_deleted_for_good_or_never_recorded_available_is_not_restored(world):
    """Past its recovery window a secret is gone (RestoreSecret cannot help); a secret the baseline recorded
    scheduled for deletion was not the function's healthy state."""
    arn = create_secret(world.clients, "orders-api/gone-key")
    lam = world.clients.get("lambda")
    lam.update_function_configuration(
        FunctionName=ORDERS, Environment={"Variables": {"PAYMENT_SECRET_ARN": world.secret_arn, "GONE": arn}}
    )
    world.rerecord.add(ORDERS)
    try:
        record_baseline(world.clients, ORDERS)
        world.clients.get("secretsmanager").delete_secret(SecretId=arn, ForceDeleteWithoutRecovery=True)
        info = get_secret_restore_info(world.clients, ORDERS)
        (secret,) = info.secrets
        assert (secret.current_state, secret.baseline_state, info.actions) == ("deleted", "available", [])
        assert "RestoreSecret cannot bring it back" in secret.refused
        reasons = reasons_of(guard(world.clients, restore_secret(arn), function=ORDERS))
        assert reasons == [f"secret {arn} no longer exists: RestoreSecret cannot bring back a deleted secret"]

        # Recorded while scheduled for deletion: never "restored" to available.
        world.schedule_deletion()
        record_baseline(world.clients, ORDERS)
        info = get_secret_restore_info(world.clients, ORDERS)
        assert info.actions == [] and not info.drifted
        reasons = reasons_of(guard(world.clients, restore_secret(world.secret_arn), function=ORDERS))
        assert "was not available in the baseline" in reasons[0]
    finally:
        lam.update_function_configuration(
            FunctionName=ORDERS, Environment={"Variables": {"PAYMENT_SECRET_ARN": world.secret_arn}}
        )


def test_a_baseline_visibility_shorter_than_the_function_timeout_is_never_restored(world):
    """Restoring it would bring back the misconfiguration (messages visible again while still being processed)."""
    world.set_visibility(10)
    world.rerecord.add(CONSUMER)
    record_baseline(world.clients, CONSUMER)  # a baseline taken while misconfigured
    world.set_visibility(20)
    info = get_queue_restore_info(world.clients, CONSUMER)
    (queue,) = info.queues
    assert info.actions == [] and "shorter than the function's timeout (30 s)" in queue.refused
    reasons = reasons_of(guard(world.clients, restore_queue(world.queue_arn, 10), function=CONSUMER))
    assert "shorter than the function's timeout (30 s)" in reasons[0]


# -- guardrail rejections ---------------------------------------------------------------------------------
def faulted(world: Catalogue) -> None:
    world.schedule_deletion()
    world.schedule_deletion(world.other_secret_arn)
    world.set_visibility(10)
    world.set_visibility(10, world.other_queue_url)
    world.set_tmp(512)


@pytest.mark.parametrize(
    "make, function, reason",
    [
        (
            lambda w: restore_secret(w.other_secret_arn),
            ORDERS,
            "is not one the function's environment named in the baseline",
        ),
        (lambda w: restore_secret(w.secret_arn, target=w.other_secret_arn), ORDERS, "does not name the secret"),
        (lambda w: restore_secret(w.secret_arn, target=SECRET), ORDERS, "does not name the secret"),
        (lambda w: restore_secret(w.secret_arn), CONSUMER, "is not one the function's environment named"),
        (
            lambda w: restore_queue(w.other_queue_arn),
            CONSUMER,
            "is not the source of one of the function's mappings in the baseline",
        ),
        (lambda w: restore_queue(w.queue_arn, target=w.other_queue_arn), CONSUMER, "does not name the queue"),
        (lambda w: restore_queue(w.queue_arn), ORDERS, "is not the source of one of the function's mappings"),
        (
            lambda w: restore_queue(w.queue_arn, 300),
            CONSUMER,
            "visibility timeout 300 s must equal the baseline's 180 s",
        ),
        (lambda w: restore_queue(w.queue_arn, 30), CONSUMER, "visibility timeout 30 s must equal the baseline's 180 s"),
        (lambda w: restore_tmp(2048), PROCESSOR, "ephemeral storage 2048 MB must equal the baseline 1024 MB"),
        (lambda w: restore_tmp(function=ORDERS), PROCESSOR, "targets function orders-api, not the incident's"),
        (lambda w: restore_tmp(fault="timeout"), PROCESSOR, "does not remedy timeout"),
        (lambda w: restore_tmp(memory_size=256), PROCESSOR, "by ephemeral storage alone"),
    ],
    ids=[
        "another-secret",
        "target-another-secret",
        "target-a-secret-name",
        "a-secret-of-another-function",
        "another-queue",
        "target-another-queue",
        "a-queue-of-another-function",
        "visibility-above-the-baseline",
        "visibility-below-the-baseline",
        "storage-not-the-baseline",
        "storage-of-another-function",
        "storage-for-another-fault",
        "storage-fault-changing-memory",
    ],
)
def test_guardrails_reject_what_is_not_the_baseline_restore(world, make, function, reason):
    faulted(world)
    reasons = reasons_of(guard(world.clients, make(world), function=function))
    assert any(reason in r for r in reasons), reasons


@pytest.mark.parametrize(
    "make, function, reason",
    [
        (lambda w: restore_secret(w.secret_arn), ORDERS, "is not scheduled for deletion: nothing to restore"),
        (lambda w: restore_queue(w.queue_arn), CONSUMER, "already equals the baseline (180 s): nothing to restore"),
        (lambda w: restore_tmp(), PROCESSOR, "already equal the baseline: nothing to restore"),
    ],
    ids=["secret-not-scheduled-for-deletion", "queue", "storage"],
)
def test_nothing_to_restore_is_rejected(world, make, function, reason):
    reasons = reasons_of(guard(world.clients, make(world), function=function))
    assert any(reason in r for r in reasons), reasons


def test_a_queue_is_named_by_its_arn_or_its_url_and_a_secret_by_its_full_arn_only(world):
    from incident_responder.account.event_sources import queue_url_of

    faulted(world)
    for target in (world.queue_arn, queue_url_of(world.queue_arn)):
        assert guard(world.clients, restore_queue(world.queue_arn, target=target), function=CONSUMER).actions, target
    other = queue_url_of(world.other_queue_arn)
    assert guard(world.clients, restore_queue(world.queue_arn, target=other), function=CONSUMER).actions == []
    # A secret's name, or its ARN without the suffix, may name another secret: only the full ARN is taken.
    partial = world.secret_arn.rsplit("-", 1)[0]
    for target in (SECRET, partial):
        assert guard(world.clients, restore_secret(world.secret_arn, target=target), function=ORDERS).actions == []


def test_the_drift_each_action_restores_is_the_difference_drift_reports(world):
    """The guardrails' drift requirement names exactly the paths drift reports for each fault: the action is
    justified by a difference read from the account; against an account without it, it is refused."""
    faulted(world)
    cases = [
        (ORDERS, restore_secret(world.secret_arn), [f"secrets.{world.secret_arn}.deleted_date"]),
        (
            CONSUMER,
            restore_queue(world.queue_arn),
            [f"event_source_mappings.{world.mapping_uuid}.queue_visibility_timeout"],
        ),
        (PROCESSOR, restore_tmp(), ["ephemeral_storage"]),
    ]
    for function, submitted_action, paths in cases:
        action = RemediationAction.model_validate(submitted_action)
        current = read_function_configuration(world.clients, function)
        baseline = load_baseline(world.clients, function).configuration
        assert drift_paths(action.typed_parameters(), current) == paths
        assert set(paths) <= {d.path for d in diff_configurations(baseline, current)}
        assert check_action(action, current, baseline) == []
        # The same action against an account that shows no difference for it: no evidence, no change.
        reasons = check_action(action, baseline, baseline)
        assert reasons and "nothing to restore" in reasons[0], reasons


def test_a_restored_secret_always_needs_a_person_and_ephemeral_storage_may_be_approved_automatically(world):
    faulted(world)
    secret = guard(world.clients, restore_secret(world.secret_arn), function=ORDERS).actions
    tmp = guard(world.clients, restore_tmp(), function=PROCESSOR).actions
    assert {a: RISK_FOR_ACTION[a] for a in ("restore_secret", "restore_queue_attributes")} == {
        "restore_secret": "high",
        "restore_queue_attributes": "medium",
    }

    def decide(actions, fault, path):
        diagnosis = {
            "fault_types": [fault],
            "evidence": [
                {
                    "tool": "get_config_drift",
                    "field": "differences[0].path",
                    "value": path,
                    "interpretation": "changed since the baseline",
                    "verified": True,
                }
            ],
        }
        verdicts = [
            ActionVerdict.model_validate(
                {
                    "execution_order": a.execution_order,
                    "verdict": "approve",
                    "reasons": ["restores the baseline"],
                    "evidence": [{"tool": "t", "field": "f", "value": "v", "interpretation": "i", "verified": True}],
                }
            )
            for a in actions
        ]
        return apply_review_policy(actions, verdicts, diagnosis, auto_approve="low", auto_approve_iam_and_network=True)

    held = decide(secret, "dependency_missing", f"secrets.{world.secret_arn}.deleted_date")
    assert (held.outcome, held.approval, held.verdicts[0].verdict) == ("NEEDS_APPROVAL", None, "needs_human")
    assert held.verdicts[0].policy == [
        "cancelling a secret's deletion needs a person: it may have been scheduled on purpose"
    ]
    approved = decide(tmp, "storage_exhaustion", "ephemeral_storage")
    assert approved.outcome == "APPROVED" and approved.approval.channel == "auto"


def test_lookups_for_a_function_never_onboarded_are_errors(world):
    for lookup in (get_secret_restore_info, get_queue_restore_info):
        assert lookup(world.clients, "billing").error.startswith("ResourceNotFoundException")
