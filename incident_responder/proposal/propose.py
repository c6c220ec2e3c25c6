"""One remediation proposal, from a diagnosis to stored, guardrail-checked actions.

The ``propose`` Lambda handler is a thin wrapper around :func:`run_proposal`. Proposes only:
nothing here changes the account.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, Literal

import anyio
from pydantic import BaseModel

from incident_responder.account.baseline import load_baseline
from incident_responder.account.state import read_function_configuration
from incident_responder.actions.registry import sections_for
from incident_responder.agent.graph import run_agent_over_mcp
from incident_responder.agent.spec import AgentRun, Limits
from incident_responder.agent.tools import McpServerConfig, ToolProvider
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import UNRESOLVABLE_FAULTS, Incident, RemediationProposal
from incident_responder.core.members import member_function_arn
from incident_responder.guardrails.policy import apply_guardrails
from incident_responder.investigation.runbook import get_runbook
from incident_responder.notify.notifications import Notification, proposal_notification
from incident_responder.proposal.errors import DiagnosisUnavailableError
from incident_responder.proposal.proposer import proposal_message, proposer_spec
from incident_responder.state.store import RecordStore, step_result

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
    notification: Notification | None = None
    metrics: dict[str, Any]


def diagnosis_for(
    clients: AwsClients, store: RecordStore, incident_id: str, investigation: dict[str, Any] | None
) -> dict[str, Any]:
    """The diagnosis, inline or by reference (:func:`~incident_responder.state.store.step_result`)."""
    return step_result(
        clients,
        store,
        incident_id,
        kind="investigation",
        field="diagnosis",
        result=investigation,
        missing=DiagnosisUnavailableError,
    )


async def propose(
    incident: Incident,
    diagnosis: dict[str, Any],
    *,
    clients: AwsClients,
    model,
    limits: Limits,
    baseline_table: str | None = None,
    servers: list[McpServerConfig] | None = None,
    provider: ToolProvider | None = None,
    remaining_ms: Callable[[], int] | None = None,
) -> AgentRun:
    # Ground truth for the guardrails: the baseline now, the account when the proposal is judged.
    recorded = load_baseline(clients, incident.function_name, table=baseline_table)
    baseline, not_restorable = recorded.configuration, recorded.not_restorable_paths()

    def guard(
        proposal: RemediationProposal, results: list[dict[str, Any]]
    ) -> tuple[RemediationProposal, dict[str, Any]]:
        # Only the parts the proposed actions restore are read (the rest is the baseline's, equal by definition).
        sections = sections_for((a.action_type for a in proposal.actions), incident.qualifier)
        current = read_function_configuration(clients, incident.function_name, sections, baseline)
        checked = apply_guardrails(
            proposal,
            current,
            baseline,
            diagnosed_faults=diagnosis.get("fault_types") or [],
            clients=clients,
            qualifier=incident.qualifier,
            not_restorable=not_restorable,
        )
        return checked, {"rejected": len(checked.rejected_actions), "kept": len(checked.actions)}

    runbooks = runbooks_for(clients, incident, diagnosis)
    cited = {f"runbook:{r['scope']}@{r['digest']}" for r in runbooks.get("runbooks", [])}

    def guard_and_cite(
        proposal: RemediationProposal, results: list[dict[str, Any]]
    ) -> tuple[RemediationProposal, dict[str, Any]]:
        # A citation of a runbook this run was not shown is the model's invention: dropped, the step kept.
        handover = [s if s.runbook in cited else s.model_copy(update={"runbook": None}) for s in proposal.handover]
        return guard(proposal.model_copy(update={"handover": handover}), results)

    return await run_agent_over_mcp(
        proposer_spec(guard_and_cite, incident.incident_id, diagnosis.get("fault_types")),
        proposal_message(incident, diagnosis, runbooks),
        model=model,
        servers=servers,
        provider=provider,
        limits=limits,
        remaining_ms=remaining_ms,
        function_name=incident.function_name,
        function_arn=member_function_arn(incident),
    )


def runbooks_for(clients: AwsClients, incident: Incident, diagnosis: dict[str, Any]) -> dict[str, Any]:
    """The team's runbooks for a diagnosis a person takes over (a fault no action fixes): the function's and its
    catalogue entries', as get_runbook answers (bounded, digest-checked); nothing without such a fault or a bucket."""
    bucket = os.environ.get("ARTIFACTS_BUCKET")
    if not bucket or not {str(f) for f in diagnosis.get("fault_types") or []} & {f.value for f in UNRESOLVABLE_FAULTS}:
        return {}
    modes = [m for m in diagnosis.get("failure_modes") or [] if isinstance(m, str)]
    return get_runbook(clients, incident.function_name, modes, bucket=bucket).model_dump(mode="json")


def run_proposal(
    incident: Incident,
    diagnosis: dict[str, Any],
    *,
    model,
    store: RecordStore,
    limits: Limits,
    baseline_table: str | None = None,
    servers: list[McpServerConfig] | None = None,
    provider: ToolProvider | None = None,
    clients: AwsClients | None = None,
    remaining_ms: Callable[[], int] | None = None,
) -> tuple[ProposalResult, AgentRun]:
    clients = clients or AwsClients.shared()
    try:
        run = anyio.run(
            lambda: propose(
                incident,
                diagnosis,
                clients=clients,
                model=model,
                limits=limits,
                baseline_table=baseline_table,
                servers=servers,
                provider=provider,
                remaining_ms=remaining_ms,
            )
        )
    except Exception as exc:
        # The run up to the error (its transcript) is kept with the record; the error goes on to the state machine.
        full = {"incident": incident.model_dump(mode="json"), "diagnosis": diagnosis}
        store.save_failed(clients, incident.incident_id, "proposal", exc, full)
        raise
    payload: RemediationProposal | None = run.payload
    proposal = payload.model_dump(mode="json") if payload is not None else None
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
            "cache_read_tokens": run.usage.cache_read_tokens,
            "cache_write_tokens": run.usage.cache_write_tokens,
            "tool_output_bytes": run.tool_output_bytes,
            "latency_ms": run.latency_ms,
            "model_ms": run.model_ms,
            "tool_ms": run.tool_ms,
        },
    )
    stored = store.save(
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
        transcript=run.transcript,
    )
    reference = stored["artifact_uri"]
    update: dict[str, Any] = {"proposal_ref": reference}
    if payload is not None:
        update["notification"] = proposal_notification(incident, diagnosis, payload, reference=reference)
    if proposal is not None and len(json.dumps(proposal)) > INLINE_PROPOSAL_LIMIT:
        update["proposal"] = None
    return result.model_copy(update=update), run
