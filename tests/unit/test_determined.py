"""No model turn where a lookup already determines the answer: the investigator's first reads, the proposer's and
the critic's pre-read lookups, and the submissions they determine (or leave to the model)."""

from __future__ import annotations

import anyio
import pytest

from incident_responder.actions.registry import lookup_order, sections_for
from incident_responder.agent.graph import run_agent
from incident_responder.agent.tools import InMemoryToolProvider, ToolSpec
from incident_responder.core.contracts import ActionType, Incident, RemediationAction
from incident_responder.investigation.investigator import first_reads, investigator_spec
from incident_responder.proposal.determined import determined_proposal
from incident_responder.proposal.proposer import proposer_spec
from incident_responder.review.critic import critic_spec
from incident_responder.review.determined import determined_review
from tests.fakes import NAME_SCHEMA, ScriptedChatModel, call

LOOKUP = "get_function_config_restore_info"
RESTORE = {
    "action_type": "update_function_configuration",
    "fault_type": "timeout",
    "target_resource": "arn:aws:lambda:us-east-1:123456789012:function:f",
    "parameters": {"function_name": "f", "timeout": 30, "memory_size": None, "ephemeral_storage": None},
    "reasoning": "timeout 1 s -> baseline 30 s",
}


def answer(*actions, error=None):
    return {"function_name": "f", "actions": list(actions), "error": error}


def lookups(result) -> InMemoryToolProvider:
    spec = ToolSpec(LOOKUP, "timeout, memory and /tmp against the baseline", NAME_SCHEMA)
    return InMemoryToolProvider({LOOKUP: (spec, lambda lambda_name: result)})


def run(spec, model, provider):
    return anyio.run(lambda: run_agent(spec, model, provider, "<incident>{}</incident>", function_name="f"))


def submitted(name: str, args: dict) -> ScriptedChatModel:
    return ScriptedChatModel(responses=[call(name, args)])


def test_a_proposal_the_lookups_determine_takes_no_model_turn():
    model = submitted("submit_proposal", {"actions": []})  # would propose nothing, if it were asked
    provider = lookups(answer(RESTORE))
    result = run(proposer_spec(None, "i-1", ["timeout"]), model, provider)
    assert result.end_reason == "submitted" and result.llm_calls == 0 and model.seen == []
    assert [a.action_type for a in result.payload.actions] == [ActionType.UPDATE_FUNCTION_CONFIGURATION]
    assert result.payload.actions[0].parameters["timeout"] == 30 and result.payload.confidence == "high"
    assert provider.calls == [(LOOKUP, {"lambda_name": "f"})] and result.usage.total_tokens == 0
    kinds = [(e["kind"], e.get("pre_read"), e.get("decided")) for e in result.transcript]
    assert kinds[:2] == [("tool", True, None), ("submission", None, True)]


@pytest.mark.parametrize(
    ("faults", "result"),
    [
        (["timeout", "application_error"], answer(RESTORE)),  # a fault a person takes over: the model says what
        (["timeout"], answer()),  # nothing to restore: the model says why
        (["timeout"], answer(RESTORE, error="AccessDenied")),  # the lookup failed
    ],
)
def test_any_other_proposal_goes_to_the_model_which_has_the_answers_already(faults, result):
    model = submitted("submit_proposal", {"actions": [], "unresolvable_faults": faults})
    run_ = run(proposer_spec(None, "i-1", faults), model, lookups(result))
    assert run_.llm_calls == 1 and run_.payload.unresolvable_faults == faults
    # The lookup's answer opened the conversation: the model's first turn already has it.
    assert any(getattr(m, "name", None) == LOOKUP for m in model.seen[0]["messages"])


def test_the_determined_proposal_copies_only_the_diagnosed_faults_actions():
    decide = determined_proposal(["timeout"])
    other = {**RESTORE, "fault_type": "memory_exhaustion"}
    made = decide([{"tool": LOOKUP, "result": answer(RESTORE, other)}])
    assert made is not None and [a["fault_type"] for a in made["actions"]] == ["timeout"]
    assert decide([{"tool": "get_recent_logs", "result": answer(RESTORE)}]) is None  # not a lookup
    assert determined_proposal([])([{"tool": LOOKUP, "result": answer(RESTORE)}]) is None


def proposed(**parameters) -> RemediationAction:
    return RemediationAction.model_validate(
        {**RESTORE, "execution_order": 1, "parameters": {**RESTORE["parameters"], **parameters}}
    )


def test_a_review_of_the_lookups_own_restore_takes_no_model_turn():
    model = submitted("submit_review", {"verdicts": []})
    result = run(critic_spec(["timeout"], [proposed()]), model, lookups(answer(RESTORE)))
    assert result.llm_calls == 0 and model.seen == []
    (verdict,) = result.payload.verdicts
    assert verdict.verdict == "approve" and verdict.execution_order == 1
    # Its evidence is checked as a model's is: the pointer resolves to the lookup's answer.
    assert [(p.tool, p.field, p.value, p.verified) for p in verdict.evidence] == [
        (LOOKUP, "actions[0].parameters.timeout", "30", True)
    ]


@pytest.mark.parametrize(
    ("action", "result"),
    [
        (proposed(timeout=900), answer(RESTORE)),  # not the lookup's restore
        (proposed(), answer()),  # the lookup sees nothing to restore
        (proposed(), answer(RESTORE, error="AccessDenied")),
    ],
)
def test_any_other_review_goes_to_the_critics_model(action, result):
    verdicts = {"verdicts": [{"execution_order": 1, "verdict": "needs_human", "reasons": ["differs"]}]}
    model = submitted("submit_review", verdicts)
    run_ = run(critic_spec(["timeout"], [action]), model, lookups(result))
    assert run_.llm_calls == 1 and run_.payload.verdicts[0].verdict == "needs_human"


def test_a_review_is_determined_only_when_every_action_is_its_lookups_own():
    decide = determined_review([proposed().model_dump(mode="json"), {**RESTORE, "execution_order": 2}])
    assert decide([{"tool": LOOKUP, "result": answer(RESTORE)}]) is not None
    stranger = {**RESTORE, "execution_order": 3, "action_type": "update_concurrency", "fault_type": "throttling"}
    assert (
        determined_review([proposed().model_dump(mode="json"), stranger])([{"tool": LOOKUP, "result": answer(RESTORE)}])
        is None
    )
    assert determined_review([])([]) is None


def incident(**alert) -> Incident:
    return Incident.model_validate(
        {
            "incident_id": "i-1",
            "function_name": "f",
            "detected_at": "2026-01-01T00:00:00Z",
            "source": "cloudwatch_alarm",
            **alert,
        }
    )


@pytest.mark.parametrize(
    ("alert", "symptom"),
    [
        ({"metric_name": "Errors"}, "get_recent_logs"),
        ({}, "get_recent_logs"),
        ({"metric_name": "Throttles"}, "get_lambda_config"),
        ({"metric_name": "ApproximateAgeOfOldestMessage", "namespace": "AWS/SQS"}, "get_lambda_config"),
        ({"metric_name": "IncomingLogEvents"}, "get_iam_state"),
    ],
)
def test_the_investigators_first_reads_are_what_its_symptom_calls_for(alert, symptom):
    assert first_reads(incident(**alert)) == (
        "get_incident_history",
        "get_function_metrics",
        symptom,
        "get_config_drift",
    )


def test_an_alarm_on_an_alias_reads_that_alias_first():
    spec = investigator_spec(incident(qualifier="live"))
    assert spec.pre_read_args == {"get_lambda_config": {"qualifier": "live"}, "get_config_drift": {"qualifier": "live"}}
    assert investigator_spec(incident()).pre_read_args == {}


def test_a_reader_reads_the_parts_its_actions_restore():
    assert sections_for([ActionType.UPDATE_FUNCTION_CONFIGURATION]) == frozenset()
    assert sections_for([ActionType.RESTORE_IAM_POLICY, ActionType.UPDATE_CONCURRENCY]) == {
        "role",
        "reserved_concurrency",
    }
    assert sections_for([ActionType.UPDATE_FUNCTION_CONFIGURATION], qualifier="live") == {"aliases"}
    assert lookup_order(["timeout", "memory_exhaustion", "throttling"]) == (LOOKUP, "get_concurrency_restore_info")
