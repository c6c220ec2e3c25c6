"""One investigation, from an Incident to a stored, verified Diagnosis (or a recorded reason for none).

The ``investigate`` Lambda handler is a thin wrapper around :func:`run_investigation`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

import anyio
from pydantic import BaseModel

from incident_responder.agent.graph import run_agent_over_mcp
from incident_responder.agent.spec import AgentRun, Limits
from incident_responder.agent.tools import McpServerConfig, ToolProvider
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import Incident
from incident_responder.core.members import member_function_arn
from incident_responder.investigation.investigator import incident_message, investigator_spec
from incident_responder.state.store import RecordStore

INLINE_DIAGNOSIS_LIMIT = 32 * 1024  # larger diagnoses travel by reference (state I/O is capped at 256 KB)


class InvestigationMetrics(BaseModel):
    llm_calls: int
    tool_calls: int
    provider_calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0  # of input_tokens: read from Bedrock's prompt cache
    cache_write_tokens: int = 0  # of input_tokens: written to it
    total_tokens: int
    token_budget_left: int
    tool_output_bytes: int
    grounded_ratio: float
    latency_ms: int
    model_ms: int = 0
    tool_ms: int = 0


class DiagnosisSummary(BaseModel):
    """What the DIAGNOSED state records: always inline, however large the diagnosis is."""

    fault_types: list[str]
    root_cause: str
    severity: str
    confidence: str


class InvestigationResult(BaseModel):
    """What the state machine receives: small, with large artifacts by reference."""

    incident_id: str
    outcome: Literal["DIAGNOSED", "NO_EVIDENCE", "NO_DIAGNOSIS"]
    end_reason: str
    diagnosis_summary: DiagnosisSummary | None = None
    diagnosis: dict[str, Any] | None = None
    diagnosis_ref: str | None = None
    evidence: dict[str, Any] | None = None
    metrics: InvestigationMetrics
    tools_called: list[str]


def summarize(incident: Incident, run: AgentRun, limits: Limits) -> InvestigationResult:
    diagnosis = run.payload.model_dump(mode="json") if run.payload is not None else None
    report = run.report or {}
    evidence = {k: report[k] for k in ("total", "verified", "grounded_ratio", "confidence_capped")} if report else None
    metrics = InvestigationMetrics(
        llm_calls=run.llm_calls,
        tool_calls=run.tool_calls,
        provider_calls=run.provider_calls,
        input_tokens=run.usage.input_tokens,
        output_tokens=run.usage.output_tokens,
        cache_read_tokens=run.usage.cache_read_tokens,
        cache_write_tokens=run.usage.cache_write_tokens,
        total_tokens=run.usage.total_tokens,
        token_budget_left=max(0, limits.token_cap - run.usage.total_tokens),
        tool_output_bytes=run.tool_output_bytes,
        grounded_ratio=report.get("grounded_ratio", 0.0),
        latency_ms=run.latency_ms,
        model_ms=run.model_ms,
        tool_ms=run.tool_ms,
    )
    outcome, end_reason = "DIAGNOSED" if diagnosis else "NO_DIAGNOSIS", run.end_reason
    if diagnosis and not report.get("verified"):
        # Every claim must point at real tool output: a diagnosis resting on none is not a success,
        # whatever it says (and nothing is proposed from it).
        outcome = "NO_EVIDENCE"
        end_reason = (
            f"the diagnosis ({', '.join(diagnosis['fault_types'])}) cites no verified tool output"
            f" ({run.tool_calls} tool call(s), {report.get('total', 0)} evidence pointer(s))"
        )
    return InvestigationResult(
        incident_id=incident.incident_id,
        outcome=outcome,
        end_reason=end_reason,
        diagnosis_summary=DiagnosisSummary(
            fault_types=diagnosis["fault_types"],
            root_cause=diagnosis["root_cause"][:500],
            severity=diagnosis["severity"],
            confidence=diagnosis["confidence"],
        )
        if diagnosis
        else None,
        diagnosis=diagnosis,
        evidence=evidence,
        metrics=metrics,
        tools_called=run.tools_called,
    )


async def investigate(
    incident: Incident,
    *,
    model,
    servers: list[McpServerConfig] | None = None,
    provider: ToolProvider | None = None,
    limits: Limits,
    remaining_ms: Callable[[], int] | None = None,
) -> AgentRun:
    """Run the investigator on one incident, over sessions to ``servers`` or an open ``provider``."""
    return await run_agent_over_mcp(
        investigator_spec(incident),
        incident_message(incident),
        model=model,
        servers=servers,
        provider=provider,
        limits=limits,
        remaining_ms=remaining_ms,
        function_name=incident.function_name,
        function_arn=member_function_arn(incident),
    )


def run_investigation(
    incident: Incident,
    *,
    model,
    store: RecordStore,
    limits: Limits,
    servers: list[McpServerConfig] | None = None,
    provider: ToolProvider | None = None,
    clients: AwsClients | None = None,
    remaining_ms: Callable[[], int] | None = None,
) -> tuple[InvestigationResult, AgentRun]:
    """Investigate, store the diagnosis and the reasoning chain, and return the state machine's result."""
    clients = clients or AwsClients.shared()
    try:
        run = anyio.run(
            lambda: investigate(
                incident, model=model, servers=servers, provider=provider, limits=limits, remaining_ms=remaining_ms
            )
        )
    except Exception as exc:
        # The run up to the error (its transcript) is kept with the record; the error goes on to the state machine.
        store.save_failed(
            clients, incident.incident_id, "investigation", exc, {"incident": incident.model_dump(mode="json")}
        )
        raise
    result = summarize(incident, run, limits)
    stored = store.save(
        clients,
        incident.incident_id,
        "investigation",
        summary=result.model_dump(mode="json"),
        chain=run.reasoning_chain(),
        full={
            "incident": incident.model_dump(mode="json"),
            "result": result.model_dump(mode="json"),
            "evidence_report": run.report,
            "tool_results": run.tool_results,
        },
        transcript=run.transcript,
    )
    if result.diagnosis is not None and len(json.dumps(result.diagnosis)) > INLINE_DIAGNOSIS_LIMIT:
        result = result.model_copy(
            update={
                "diagnosis": None,
                "diagnosis_ref": stored["artifact_uri"]
                or f"dynamodb://{stored['table']}/{incident.incident_id}/investigation",
            }
        )
    elif result.diagnosis is not None:
        result = result.model_copy(update={"diagnosis_ref": stored["artifact_uri"]})
    return result, run
