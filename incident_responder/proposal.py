"""One remediation proposal, from a diagnosis to stored, guardrail-checked actions.

The ``propose`` Lambda handler is a thin wrapper around :func:`run_proposal`. Proposes only:
nothing here changes the account.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

import anyio
from pydantic import BaseModel

from incident_responder.account_state import read_function_configuration
from incident_responder.agent.graph import AgentRun, Limits, run_agent_over_mcp
from incident_responder.agent.resolver import proposal_message, resolver_spec
from incident_responder.agent.tools import ToolProvider
from incident_responder.aws import AwsClients
from incident_responder.baseline import load_baseline
from incident_responder.contracts import Incident, RemediationProposal
from incident_responder.guardrails import apply_guardrails
from incident_responder.investigation import limits_from_env
from incident_responder.store import load_record, save_record

INLINE_PROPOSAL_LIMIT = 32 * 1024


class ProposalResult(BaseModel):
    incident_id: str
    outcome: Literal["PROPOSAL_READY", "NO_PROPOSAL"]
    end_reason: str
    proposal: dict[str, Any] | None = None
    proposal_ref: str | None = None
    actions: int = 0
    rejected: int = 0
    unresolvable_faults: list[str] = []
    metrics: dict[str, Any]


def diagnosis_for(clients: AwsClients, incident_id: str, investigation: dict[str, Any] | None) -> dict[str, Any]:
    """The diagnosis from the state machine's input, or from the store when it travelled by reference."""
    if investigation and investigation.get("diagnosis"):
        return investigation["diagnosis"]
    record = load_record(clients, incident_id, "investigation")
    if record and record["summary"].get("diagnosis"):
        return record["summary"]["diagnosis"]
    raise ValueError(f"no diagnosis found for incident {incident_id}")


async def propose(
    incident: Incident,
    diagnosis: dict[str, Any],
    *,
    clients: AwsClients,
    model=None,
    provider: ToolProvider | None = None,
    limits: Limits | None = None,
    remaining_ms: Callable[[], int] | None = None,
) -> AgentRun:
    # Ground truth for the guardrails, read now from the account and the baseline table.
    current = read_function_configuration(clients, incident.function_name)
    baseline = load_baseline(clients, incident.function_name).configuration

    def guard(
        proposal: RemediationProposal, results: list[dict[str, Any]]
    ) -> tuple[RemediationProposal, dict[str, Any]]:
        checked = apply_guardrails(proposal.model_copy(update={"incident_id": incident.incident_id}), current, baseline)
        return checked, {"rejected": len(checked.rejected_actions), "kept": len(checked.actions)}

    return await run_agent_over_mcp(
        resolver_spec(guard),
        proposal_message(incident, diagnosis),
        server="remediation",
        model=model,
        provider=provider,
        limits=limits or limits_from_env(),
        remaining_ms=remaining_ms,
    )


def run_proposal(
    incident: Incident,
    diagnosis: dict[str, Any],
    *,
    clients: AwsClients | None = None,
    model=None,
    provider: ToolProvider | None = None,
    limits: Limits | None = None,
    remaining_ms: Callable[[], int] | None = None,
) -> tuple[ProposalResult, AgentRun]:
    clients = clients or AwsClients.shared()
    run = anyio.run(
        lambda: propose(
            incident,
            diagnosis,
            clients=clients,
            model=model,
            provider=provider,
            limits=limits,
            remaining_ms=remaining_ms,
        )
    )
    proposal = run.payload.model_dump(mode="json") if run.payload is not None else None
    result = ProposalResult(
        incident_id=incident.incident_id,
        outcome="PROPOSAL_READY" if proposal is not None else "NO_PROPOSAL",
        end_reason=run.end_reason,
        proposal=proposal,
        actions=len(proposal["actions"]) if proposal else 0,
        rejected=len(proposal["rejected_actions"]) if proposal else 0,
        unresolvable_faults=proposal["unresolvable_faults"] if proposal else [],
        metrics={
            "llm_calls": run.llm_calls,
            "tool_calls": run.tool_calls,
            "total_tokens": run.usage.total_tokens,
            "input_tokens": run.usage.input_tokens,
            "output_tokens": run.usage.output_tokens,
            "tool_output_bytes": run.tool_output_bytes,
            "latency_ms": run.latency_ms,
            "model_ms": run.model_ms,
            "tool_ms": run.tool_ms,
        },
    )
    stored = save_record(
        clients,
        incident.incident_id,
        "proposal",
        summary=result.model_dump(mode="json"),
        chain=run.reasoning_chain(),
        full={
            "incident": incident.model_dump(mode="json"),
            "diagnosis": diagnosis,
            "result": result.model_dump(mode="json"),
            "tool_results": run.tool_results,
        },
    )
    if proposal is not None and len(json.dumps(proposal)) > INLINE_PROPOSAL_LIMIT:
        result = result.model_copy(update={"proposal": None})
    return result.model_copy(update={"proposal_ref": stored["artifact_uri"]}), run
