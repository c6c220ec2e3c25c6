"""The offline proposer and critic on the new faults, with scripted remediation lookups (the shape the
remediation server's get_alias_restore_info, get_kms_restore_info and get_event_source_restore_info return)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from incident_responder.actions.registry import LOOKUP_FOR_FAULT, REMEDIATION_TOOLS
from incident_responder.agent import offline
from incident_responder.agent.graph import run_agent
from incident_responder.agent.tools import InMemoryToolProvider, ToolSpec
from incident_responder.core.contracts import (
    ACTION_FOR_FAULT,
    UNRESOLVABLE_FAULTS,
    FaultType,
    Incident,
    RemediationAction,
)
from incident_responder.proposal.proposer import SYSTEM_PROMPT, proposal_message, proposer_spec
from incident_responder.review.critic import CRITIC, review_message
from tests.fakes import NAME_SCHEMA

FN = "orders-api"
FN_ARN = f"arn:aws:lambda:us-east-1:123456789012:function:{FN}"
KEY_ARN = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
UUID = "a1b2c3d4-5678-90ab-cdef-111122223333"
INCIDENT = Incident(
    incident_id="i-1",
    function_name=FN,
    source="cloudwatch_alarm",
    detected_at="2026-11-23T18:44:05Z",
    metric_name="Errors",
    namespace="AWS/Lambda",
)

ROLLBACK = {
    "fault_type": "deployment_regression",
    "action_type": "rollback_alias",
    "target_resource": f"{FN_ARN}:live",
    "parameters": {"function_name": FN, "alias_name": "live", "function_version": "2"},
    "reasoning": "alias live routes to version 3; the baseline routes it to version 2",
}
ENABLE_KEY = {
    "fault_type": "kms_key_disabled",
    "action_type": "enable_kms_key",
    "target_resource": KEY_ARN,
    "parameters": {"key_arn": KEY_ARN},
    "reasoning": "the key is Disabled; the baseline recorded it Enabled",
}
ENABLE_MAPPING = {
    "fault_type": "event_source_disabled",
    "action_type": "enable_event_source_mapping",
    "target_resource": f"arn:aws:lambda:us-east-1:123456789012:event-source-mapping:{UUID}",
    "parameters": {"function_name": FN, "uuid": UUID},
    "reasoning": "the mapping is Disabled; the baseline recorded it Enabled",
}
LOOKUPS = {
    "get_alias_restore_info": ROLLBACK,
    "get_kms_restore_info": ENABLE_KEY,
    "get_event_source_restore_info": ENABLE_MAPPING,
}


def lookup(action: dict[str, Any] | None, **fields: Any) -> dict[str, Any]:
    return {
        "function_name": FN,
        "drifted": action is not None,
        "baseline_captured_at": "2026-11-23T17:00:00+00:00",
        "actions": [action] if action else [],
        "error": None,
        **fields,
    }


def returning(result: dict[str, Any]):
    return lambda lambda_name: result


def provider(results: dict[str, dict[str, Any]]) -> InMemoryToolProvider:
    return InMemoryToolProvider(
        {name: (ToolSpec(name, name, NAME_SCHEMA), returning(result)) for name, result in results.items()}
    )


def diagnosis(*faults: str, evidence: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "fault_types": list(faults),
        "root_cause": f"{FN}: " + ", ".join(faults),
        "affected_resources": [FN_ARN],
        "evidence": evidence or [],
    }


def propose(the_diagnosis: dict[str, Any], results: dict[str, dict[str, Any]]):
    tools = provider(results)
    run = anyio.run(
        lambda: run_agent(
            proposer_spec(None, INCIDENT.incident_id),
            offline.OfflineChatModel(),
            tools,
            proposal_message(INCIDENT, the_diagnosis),
        )
    )
    assert run.end_reason == "submitted", run.end_reason
    return run.payload, [name for name, _ in tools.calls]


def test_every_fault_with_an_action_has_a_lookup_the_proposer_may_call_and_a_no_drift_field():
    assert set(LOOKUP_FOR_FAULT) == {str(f) for f in ACTION_FOR_FAULT}
    assert set(LOOKUP_FOR_FAULT.values()) <= REMEDIATION_TOOLS
    assert set(offline.NO_DRIFT) == {str(f) for f in ACTION_FOR_FAULT}
    # The proposer's prompt names every unresolvable fault from the contract, not a set of its own.
    assert all(f.value in SYSTEM_PROMPT for f in UNRESOLVABLE_FAULTS)
    assert FaultType.DEPENDENCY_THROTTLING in UNRESOLVABLE_FAULTS


@pytest.mark.parametrize("tool", list(LOOKUPS))
def test_the_proposer_copies_the_lookups_restore_for_each_new_fault(tool):
    action = LOOKUPS[tool]
    proposal, called = propose(diagnosis(action["fault_type"]), {tool: lookup(action)})
    assert called == [tool]
    (proposed,) = proposal.actions
    assert (str(proposed.action_type), proposed.parameters) == (action["action_type"], action["parameters"])
    assert proposal.unresolvable_faults == [] and proposal.confidence == "high"


def test_all_three_new_faults_at_once_are_ordered_by_the_contracts_priority():
    faults = ["deployment_regression", "event_source_disabled", "kms_key_disabled"]
    proposal, called = propose(diagnosis(*faults), {tool: lookup(a) for tool, a in LOOKUPS.items()})
    assert sorted(called) == sorted(LOOKUPS)
    assert [str(a.action_type) for a in proposal.actions] == [
        "enable_kms_key",
        "enable_event_source_mapping",
        "rollback_alias",
    ]


def test_a_throttled_dependency_gets_no_action_and_says_what_a_person_should_look_at():
    evidence = [
        {
            "tool": "get_recent_logs",
            "field": "errors[0].error_type",
            "value": "ProvisionedThroughputExceededException",
            "interpretation": "throttled",
            "verified": True,
        }
    ]
    proposal, called = propose(
        diagnosis("dependency_throttling", evidence=evidence), {t: lookup(a) for t, a in LOOKUPS.items()}
    )
    assert called == [] and proposal.actions == []
    assert proposal.unresolvable_faults == ["dependency_throttling"]
    thought = proposal.chain_of_thought
    assert "capacity" in thought and "other writers" in thought and "retries" in thought
    assert "ProvisionedThroughputExceededException" in thought


def test_a_lookup_without_a_restore_leaves_the_fault_to_a_person():
    proposal, _ = propose(diagnosis("deployment_regression"), {"get_alias_restore_info": lookup(None)})
    assert proposal.actions == [] and proposal.unresolvable_faults == ["deployment_regression"]
    assert "no restore parameters found for deployment_regression" in proposal.chain_of_thought


# -- the critic ------------------------------------------------------------------------------------------
def review(action: dict[str, Any], result: dict[str, Any]):
    tool = LOOKUP_FOR_FAULT[action["fault_type"]]
    proposed = RemediationAction.model_validate({**action, "execution_order": 1})
    tools = provider({tool: result})
    run = anyio.run(
        lambda: run_agent(
            CRITIC,
            offline.OfflineChatModel(),
            tools,
            review_message(INCIDENT, diagnosis(action["fault_type"]), [proposed]),
        )
    )
    assert run.end_reason == "submitted" and [name for name, _ in tools.calls] == [tool]
    (verdict,) = run.payload.verdicts
    return verdict


@pytest.mark.parametrize(
    "action, pointer",
    [
        (ROLLBACK, ("actions[0].parameters.function_version", "2")),
        (ENABLE_KEY, ("actions[0].parameters.key_arn", KEY_ARN)),
        (ENABLE_MAPPING, ("actions[0].parameters.uuid", UUID)),
    ],
    ids=["rollback", "key", "mapping"],
)
def test_the_critic_approves_exactly_the_lookups_restore(action, pointer):
    verdict = review(action, lookup(action))
    assert verdict.verdict == "approve" and "restores exactly" in verdict.reasons[0]
    assert (verdict.evidence[0].field, verdict.evidence[0].value, verdict.evidence[0].verified) == (*pointer, True)


@pytest.mark.parametrize("action", [ROLLBACK, ENABLE_KEY, ENABLE_MAPPING], ids=["rollback", "key", "mapping"])
def test_the_critic_rejects_a_no_op_when_nothing_drifted(action):
    verdict = review(action, lookup(None))
    assert verdict.verdict == "reject" and "no-op" in verdict.reasons[0]
    assert (verdict.evidence[0].field, verdict.evidence[0].value, verdict.evidence[0].verified) == (
        "drifted",
        "false",
        True,
    )


def test_the_critic_sends_a_rollback_to_another_version_to_a_person():
    other = {**ROLLBACK, "parameters": {**ROLLBACK["parameters"], "function_version": "1"}}
    verdict = review(other, lookup(ROLLBACK))
    assert verdict.verdict == "needs_human" and "parameters differ" in verdict.reasons[0]
    assert (verdict.evidence[0].field, verdict.evidence[0].value) == ("actions[0].parameters.function_version", "2")


def test_the_critic_approves_no_restore_whose_parameters_do_not_validate():
    from langchain_core.messages import ToolMessage

    from incident_responder.agent.offline.review import judge_action
    from incident_responder.agent.protocol import quote_untrusted

    # Neither the proposed action nor the lookup's restore validates: equal, but nothing to approve.
    broken = {**ROLLBACK, "execution_order": 1, "parameters": {"function_version": {}}}
    tool = LOOKUP_FOR_FAULT[broken["fault_type"]]
    result = ToolMessage(quote_untrusted(tool, lookup(broken)), tool_call_id="c", name=tool)
    verdict = judge_action(offline.Observations([result]), broken)
    assert verdict["verdict"] == "needs_human" and "parameters differ" in verdict["reasons"][0]
    # An action naming no fault has no lookup.
    assert judge_action(offline.Observations([result]), {**broken, "fault_type": None})["verdict"] == "reject"
