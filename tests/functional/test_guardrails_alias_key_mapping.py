"""The lookups and guardrails of the wider world's actions, against the lab: an alias moved to a new version, the
environment's key disabled, a queue's event source mapping disabled. Each lookup proposes exactly the baseline
restore and the guardrails keep it; everything else (another alias, version, key, mapping or function, $LATEST,
nothing to restore) is rejected with its reason.
"""

from __future__ import annotations

import pytest

from incident_responder.account.baseline import load_baseline, record_baseline
from incident_responder.actions.alias import get_alias_restore_info
from incident_responder.actions.event_source_mapping import get_event_source_restore_info
from incident_responder.actions.kms import get_kms_restore_info
from incident_responder.actions.registry import RISK_FOR_ACTION
from incident_responder.core.contracts import (
    ProposalSubmission,
    RemediationAction,
    RemediationProposal,
)
from incident_responder.guardrails.checks import check_action
from incident_responder.review.policy import apply_review_policy
from tests.fakes import guard
from tests.wider_account import CONSUMER, ORDERS, QUEUE, build_wider_account, code, rollback


@pytest.fixture
def world(clients):
    return build_wider_account(clients)


def enable_key(key_arn, target=None):
    return {
        "fault_type": "kms_key_disabled",
        "action_type": "enable_kms_key",
        "target_resource": target or key_arn,
        "parameters": {"key_arn": key_arn},
    }


def enable_mapping(uuid, function=CONSUMER, target=None):
    return {
        "fault_type": "event_source_disabled",
        "action_type": "enable_event_source_mapping",
        "target_resource": target or uuid,
        "parameters": {"function_name": function, "uuid": uuid},
    }


def reasons_of(checked) -> list[str]:
    (rejected,) = checked.rejected_actions
    return rejected.reasons


def submitted(info) -> list[dict]:
    """The lookup's ready-made actions as a model would submit them (through the submit_proposal schema)."""
    submission = ProposalSubmission.model_validate({"actions": [a.model_dump(mode="json") for a in info.actions]})
    return [a.model_dump(mode="json") for a in submission.actions]


# -- lookups ------------------------------------------------------------------------------------------
def test_the_baseline_records_the_alias_key_and_mapping(world):
    base = load_baseline(world.clients, ORDERS).configuration
    (alias,) = base.aliases
    assert (alias.name, alias.function_version, alias.code_sha256) == ("live", "1", world.v1_sha)
    assert [(k.key_arn, k.key_state) for k in base.kms_keys] == [(world.key_arn, "Enabled")]
    (mapping,) = load_baseline(world.clients, CONSUMER).configuration.event_source_mappings
    assert (mapping.uuid, mapping.event_source_arn, mapping.state) == (world.mapping_uuid, world.queue_arn, "Enabled")


def test_alias_lookup_rolls_back_to_the_baseline_version_with_both_code_hashes(world):
    assert get_alias_restore_info(world.clients, ORDERS).model_dump(exclude={"baseline_captured_at"}) == {
        "function_name": ORDERS,
        "drifted": False,
        "aliases": [],
        "not_in_baseline": [],
        "not_restorable": [],
        "actions": [],
        "error": None,
    }
    world.move_alias("2")
    info = get_alias_restore_info(world.clients, ORDERS)
    assert info.drifted and info.error is None and info.baseline_captured_at
    (alias,) = info.aliases
    assert (alias.alias_name, alias.current_version, alias.baseline_version) == ("live", "2", "1")
    assert (alias.current_code_sha256, alias.baseline_code_sha256) == (world.v2_sha, world.v1_sha)
    assert alias.baseline_version_code_sha256_now == world.v1_sha and alias.refused is None
    (action,) = info.actions
    assert action.target_resource == f"{world.orders_arn}:live"
    assert action.parameters.model_dump() == {"function_name": ORDERS, "alias_name": "live", "function_version": "1"}
    checked = guard(world.clients, *submitted(info), function=ORDERS)
    assert checked.rejected_actions == [] and len(checked.actions) == 1
    assert (checked.actions[0].risk_level, checked.actions[0].requires_approval) == ("medium", True)


def test_alias_lookup_refuses_when_the_baseline_version_is_gone_or_not_the_recorded_code(world):
    lam = world.clients.get("lambda")
    world.move_alias("2")
    lam.delete_function(FunctionName=ORDERS, Qualifier="1")
    info = get_alias_restore_info(world.clients, ORDERS)
    (alias,) = info.aliases
    assert info.drifted and info.actions == [] and alias.baseline_version_code_sha256_now is None
    assert alias.refused == "baseline version 1 no longer exists: nothing to roll back to"

    # The function re-created since onboarding: version 1 exists again, with other code.
    lam.delete_function(FunctionName=ORDERS)
    lam.create_function(
        FunctionName=ORDERS,
        Runtime="nodejs20.x",
        Role="arn:aws:iam::123456789012:role/orders-api-role",
        Handler="index.handler",
        Code={"ZipFile": code("exports.handler = async () => 'someone else';")},
        KMSKeyArn=world.key_arn,
    )
    lam.publish_version(FunctionName=ORDERS)
    lam.update_function_code(FunctionName=ORDERS, ZipFile=code("exports.handler = async () => 'v2';"))
    lam.publish_version(FunctionName=ORDERS)
    lam.create_alias(FunctionName=ORDERS, Name="live", FunctionVersion="2")
    info = get_alias_restore_info(world.clients, ORDERS)
    (alias,) = info.aliases
    assert info.actions == [] and alias.baseline_version_code_sha256_now not in (None, world.v1_sha)
    assert "code hash is not the one the baseline recorded" in alias.refused
    # A model that submits the rollback anyway: the baseline alone cannot tell, the account can.
    from incident_responder.account.state import read_function_configuration
    from incident_responder.guardrails.policy import apply_guardrails

    proposal = RemediationProposal.model_validate({"incident_id": "i-1", "actions": [rollback()]})
    current = read_function_configuration(world.clients, ORDERS)
    baseline = load_baseline(world.clients, ORDERS).configuration
    faults = ["deployment_regression"]
    assert apply_guardrails(proposal, current, baseline, faults).actions
    checked = apply_guardrails(proposal, current, baseline, faults, clients=world.clients)
    assert reasons_of(checked) == ["version 1's code hash is not the one the baseline recorded"]


def test_kms_lookup_enables_only_the_functions_recorded_key(world):
    assert not get_kms_restore_info(world.clients, ORDERS).drifted
    world.disable_key()
    info = get_kms_restore_info(world.clients, ORDERS)
    (key,) = info.keys
    assert (key.key_arn, key.current_state, key.baseline_state, key.refused) == (
        world.key_arn,
        "Disabled",
        "Enabled",
        None,
    )
    (action,) = info.actions
    assert (action.action_type, action.target_resource, action.parameters.key_arn) == (
        "enable_kms_key",
        world.key_arn,
        world.key_arn,
    )
    checked = guard(world.clients, *submitted(info), function=ORDERS)
    assert [(a.risk_level, a.requires_approval) for a in checked.actions] == [("high", True)]


def test_kms_lookup_never_proposes_a_key_the_baseline_did_not_record(world):
    """A baseline taken before keys were recorded knows no key: a disabled one is reported, never enabled."""
    from incident_responder.account.baseline import baseline_table_name

    ddb = world.clients.get("dynamodb")
    key = {"function_name": {"S": ORDERS}}
    item = ddb.get_item(TableName=baseline_table_name(), Key=key)["Item"]
    older = load_baseline(world.clients, ORDERS).configuration.model_copy(update={"kms_keys": []})
    ddb.put_item(TableName=baseline_table_name(), Item={**item, "configuration": {"S": older.model_dump_json()}})
    world.disable_key()
    info = get_kms_restore_info(world.clients, ORDERS)
    assert info.drifted and info.actions == []
    (restore,) = info.keys
    assert (restore.key_arn, restore.current_state, restore.baseline_state) == (world.key_arn, "Disabled", None)
    assert "the baseline did not record this key" in restore.refused
    reasons = reasons_of(guard(world.clients, enable_key(world.key_arn), function=ORDERS))
    assert "was not recorded in the baseline" in reasons[0]


def test_event_source_lookup_enables_the_functions_own_disabled_mapping(world):
    assert not get_event_source_restore_info(world.clients, CONSUMER).drifted
    world.disable_mapping()
    info = get_event_source_restore_info(world.clients, CONSUMER)
    (mapping,) = info.mappings
    assert (mapping.uuid, mapping.event_source_arn, mapping.current_state, mapping.baseline_state) == (
        world.mapping_uuid,
        world.queue_arn,
        "Disabled",
        "Enabled",
    )
    (action,) = info.actions
    assert action.target_resource == f"arn:aws:lambda:us-east-1:123456789012:event-source-mapping:{world.mapping_uuid}"
    assert action.parameters.model_dump() == {"function_name": CONSUMER, "uuid": world.mapping_uuid}
    checked = guard(world.clients, *submitted(info), function=CONSUMER)
    assert [(a.risk_level, a.requires_approval) for a in checked.actions] == [("medium", True)]
    # The other function has no mapping: nothing to say about the queue there.
    assert get_event_source_restore_info(world.clients, ORDERS).model_dump(
        include={"drifted", "actions", "mappings"}
    ) == {"drifted": False, "actions": [], "mappings": []}


def test_lookups_for_a_function_never_onboarded_are_errors(world):
    for lookup in (
        get_alias_restore_info,
        get_kms_restore_info,
        get_event_source_restore_info,
    ):
        assert lookup(world.clients, "billing").error.startswith("ResourceNotFoundException")


# -- guardrail rejections -----------------------------------------------------------------------------
def faulted(world):
    world.move_alias("2")
    world.disable_key()
    world.disable_mapping()


_CASES = [
    (lambda w: rollback(version="2"), ORDERS, "version 2 is not alias live's baseline version 1"),
    (lambda w: rollback(version="3"), ORDERS, "version 3 is not alias live's baseline version 1"),
    (
        lambda w: rollback(alias="canary", target=f"{w.orders_arn}:canary"),
        ORDERS,
        "alias canary is not one of the function's aliases recorded in the baseline (live)",
    ),
    (lambda w: rollback(function=CONSUMER), ORDERS, "targets function queue-consumer, not the incident's"),
    (
        lambda w: rollback(target=f"arn:aws:lambda:us-east-1:123456789012:function:{CONSUMER}:live"),
        ORDERS,
        "does not name the function or its alias live",
    ),
    (lambda w: rollback(target=f"{w.orders_arn}:prod"), ORDERS, "does not name the function or its alias live"),
    (lambda w: enable_key(w.other_key_arn), ORDERS, "is not the key the function's configuration names"),
    (lambda w: enable_key(w.key_arn, target=w.other_key_arn), ORDERS, "does not name the key"),
    (lambda w: enable_key(w.key_arn), CONSUMER, "is not the key the function's configuration names (none"),
    (
        lambda w: enable_mapping(w.mapping_uuid, function=CONSUMER),
        ORDERS,
        "targets function queue-consumer, not the incident's function orders-api",
    ),
    (
        lambda w: enable_mapping("00000000-0000-0000-0000-000000000000"),
        CONSUMER,
        "is not one of the function's mappings recorded in the baseline",
    ),
    (
        lambda w: enable_mapping(w.mapping_uuid, target="11111111-1111-1111-1111-111111111111"),
        CONSUMER,
        "does not name the event source mapping",
    ),
]
_IDS = [
    "version-not-the-baseline",
    "version-that-never-was",
    "another-alias",
    "another-functions-alias",
    "target-another-functions-alias",
    "target-another-qualifier",
    "another-key",
    "target-another-key",
    "a-key-of-another-function",
    "another-functions-mapping",
    "unknown-mapping",
    "target-another-mapping",
]


def test_guardrails_reject_what_is_not_the_baseline_restore(world, subtests):
    # One faulted world for every case: checking a proposal changes nothing.
    faulted(world)
    for case_id, (make, function, reason) in zip(_IDS, _CASES, strict=True):
        with subtests.test(case_id):
            reasons = reasons_of(guard(world.clients, make(world), function=function))
            assert any(reason in r for r in reasons), reasons


def test_latest_is_never_a_rollback_target(world):
    """$LATEST does not even validate as a rollback's parameters; a constructed one is still refused by name."""
    faulted(world)
    with pytest.raises(ValueError, match="function_version"):
        RemediationAction.model_validate(rollback(version="$LATEST"))
    action = RemediationAction.model_construct(**rollback(version="$LATEST"), risk_level="medium")
    proposal = RemediationProposal.model_construct(incident_id="i-1", actions=[action], rejected_actions=[])
    from incident_responder.account.state import read_function_configuration
    from incident_responder.guardrails.policy import apply_guardrails

    checked = apply_guardrails(
        proposal,
        read_function_configuration(world.clients, ORDERS),
        load_baseline(world.clients, ORDERS).configuration,
        ["deployment_regression"],
    )
    assert checked.actions == [] and reasons_of(checked) == [
        "$LATEST is never a rollback target: an alias goes back to its baseline's published version"
    ]


def test_a_mapping_added_after_onboarding_is_not_the_functions_to_enable(world):
    sqs, lam = world.clients.get("sqs"), world.clients.get("lambda")
    url = sqs.create_queue(QueueName="late-queue")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    late = lam.create_event_source_mapping(EventSourceArn=arn, FunctionName=CONSUMER, Enabled=False)["UUID"]
    info = get_event_source_restore_info(world.clients, CONSUMER)
    assert info.not_in_baseline == [late] and info.actions == []
    reasons = reasons_of(guard(world.clients, enable_mapping(late), function=CONSUMER))
    assert "is not one of the function's mappings recorded in the baseline" in reasons[0]


@pytest.mark.parametrize(
    "make, function",
    [
        (lambda w: rollback(), ORDERS),
        (lambda w: enable_key(w.key_arn), ORDERS),
        (lambda w: enable_mapping(w.mapping_uuid), CONSUMER),
    ],
    ids=["alias", "key", "mapping"],
)
def test_nothing_to_restore_is_rejected(world, make, function):
    reasons = reasons_of(guard(world.clients, make(world), function=function))
    assert any("nothing to restore" in r for r in reasons), reasons


def test_what_the_baseline_did_not_have_enabled_is_never_enabled(world):
    """A key or mapping recorded disabled at onboarding stays the owner's business."""
    world.disable_key()
    world.disable_mapping()
    record_baseline(world.clients, ORDERS)
    record_baseline(world.clients, CONSUMER)
    key = reasons_of(guard(world.clients, enable_key(world.key_arn), function=ORDERS))
    mapping = reasons_of(guard(world.clients, enable_mapping(world.mapping_uuid), function=CONSUMER))
    assert "was Disabled in the baseline, not Enabled" in key[0]
    assert "was Disabled in the baseline, not Enabled" in mapping[0]
    assert get_kms_restore_info(world.clients, ORDERS).drifted is False


def test_targets_may_be_named_by_arn_or_id(world):
    faulted(world)
    key_id = world.key_arn.rsplit("/", 1)[-1]
    mapping_arn = f"arn:aws:lambda:us-east-1:123456789012:event-source-mapping:{world.mapping_uuid}"
    for target in (ORDERS, world.orders_arn, f"{world.orders_arn}:live"):
        assert guard(world.clients, rollback(target=target), function=ORDERS).actions, target
    for target in (world.key_arn, key_id):
        assert guard(world.clients, enable_key(world.key_arn, target=target), function=ORDERS).actions, target
    for target in (world.mapping_uuid, mapping_arn):
        assert guard(world.clients, enable_mapping(world.mapping_uuid, target=target), function=CONSUMER).actions
    # An alias ARN names no key.
    alias_arn = "arn:aws:kms:us-east-1:123456789012:alias/orders"
    assert guard(world.clients, enable_key(world.key_arn, target=alias_arn), function=ORDERS).actions == []


# -- risk and the approval floor ------------------------------------------------------------------------
def test_new_actions_are_never_low_risk_and_a_key_always_needs_a_person(world):
    assert {a: RISK_FOR_ACTION[a] for a in ("rollback_alias", "enable_kms_key", "enable_event_source_mapping")} == {
        "rollback_alias": "medium",
        "enable_kms_key": "high",
        "enable_event_source_mapping": "medium",
    }
    faulted(world)
    checked = guard(world.clients, rollback(), enable_key(world.key_arn), function=ORDERS)
    actions = checked.actions
    diagnosis = {
        "fault_types": ["deployment_regression", "kms_key_disabled"],
        "evidence": [
            {
                "tool": "get_config_drift",
                "field": f"differences[{i}].path",
                "value": path,
                "interpretation": "changed since the baseline",
                "verified": True,
            }
            for i, path in enumerate(("aliases.live.function_version", f"kms_keys.{world.key_arn}.key_state"))
        ],
    }
    verdicts = [
        {
            "execution_order": a.execution_order,
            "verdict": "approve",
            "reasons": ["restores the baseline"],
            "evidence": [{"tool": "t", "field": "f", "value": "v", "interpretation": "i", "verified": True}],
        }
        for a in actions
    ]
    from incident_responder.core.contracts import ActionVerdict

    decision = apply_review_policy(
        actions,
        [ActionVerdict.model_validate(v) for v in verdicts],
        diagnosis,
        auto_approve="low",
        auto_approve_iam_and_network=True,
    )
    assert decision.outcome == "NEEDS_APPROVAL" and decision.approval is None and decision.risk == "high"
    by_type = {a.action_type.value: v for a, v in zip(actions, decision.verdicts, strict=True)}
    assert by_type["enable_kms_key"].verdict == "needs_human"
    assert by_type["enable_kms_key"].policy == [
        "enabling a KMS key needs a person: it may have been disabled on purpose"
    ]
    assert by_type["rollback_alias"].verdict == "approve"  # medium: approved, yet a person still decides


def test_check_action_names_the_queue_functions_mapping_only(world):
    """check_action directly: the incident's own configuration is the ground truth, whatever the target says."""
    from incident_responder.account.state import read_function_configuration

    world.disable_mapping()
    current = read_function_configuration(world.clients, CONSUMER)
    baseline = load_baseline(world.clients, CONSUMER).configuration
    action = RemediationAction.model_validate(enable_mapping(world.mapping_uuid))
    assert check_action(action, current, baseline) == []
    assert QUEUE in world.queue_arn
