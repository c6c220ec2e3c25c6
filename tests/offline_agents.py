"""The offline proposer and critic driven over recorded lookups: a diagnosis, a lookup result, a proposal, a review."""

from __future__ import annotations

from typing import Any

import anyio

from incident_responder.actions.registry import LOOKUP_FOR_FAULT
from incident_responder.agent import offline
from incident_responder.agent.graph import run_agent
from incident_responder.agent.tools import InMemoryToolProvider, ToolSpec
from incident_responder.core.contracts import (
    Incident,
    RemediationAction,
)
from incident_responder.proposal.proposer import proposal_message, proposer_spec
from incident_responder.review.critic import CRITIC, review_message
from tests.fakes import NAME_SCHEMA

FN = "orders-api"

FN_ARN = f"arn:aws:lambda:us-east-1:123456789012:function:{FN}"

INCIDENT = Incident(
    incident_id="i-1",
    function_name=FN,
    source="cloudwatch_alarm",
    detected_at="2026-11-23T18:44:05Z",
    metric_name="Errors",
    namespace="AWS/Lambda",
)


def provider(results: dict[str, dict[str, Any]]) -> InMemoryToolProvider:
    return InMemoryToolProvider(
        {name: (ToolSpec(name, name, NAME_SCHEMA), returning(result)) for name, result in results.items()}
    )


def returning(result: dict[str, Any]):
    return lambda lambda_name: result


def lookup(action: dict[str, Any] | None, **fields: Any) -> dict[str, Any]:
    return {
        "function_name": FN,
        "drifted": action is not None,
        "baseline_captured_at": "2026-11-23T17:00:00+00:00",
        "actions": [action] if action else [],
        "error": None,
        **fields,
    }


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
