"""REVIEWING: the critic agent judges each proposed action, then the approval policy decides who approves.

The ``review`` Lambda handler is a thin wrapper around :func:`run_review`. The critic's verdicts are
advice; :func:`~incident_responder.review.policy.apply_review_policy` is the deterministic floor it cannot lower. The outcome is
REJECTED (no action survives), APPROVED (automatically, only under ``AutoApprove=low``) or
NEEDS_APPROVAL (a person decides). Nothing here changes the account.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import anyio
from pydantic import BaseModel, Field

from incident_responder.agent.graph import run_agent_over_mcp
from incident_responder.agent.spec import AgentRun, Limits
from incident_responder.agent.tools import McpServerConfig, ToolProvider
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionVerdict,
    ApprovalDecision,
    HandoverStep,
    Incident,
    RejectedAction,
    RemediationAction,
    RiskLevel,
    Verdict,
)
from incident_responder.core.members import member_function_arn
from incident_responder.memory.rules import Memory
from incident_responder.review.critic import critic_spec, review_message
from incident_responder.review.errors import ProposalUnavailableError
from incident_responder.review.policy import AutoApprove, IgnoredVerdict, PolicyDecision, apply_review_policy
from incident_responder.state.store import RecordStore, step_result

# The review travels in the state machine's state (256 KB): the critic's prose is bounded there, whole in S3.
MAX_REASON_CHARS = 1000
MAX_POINTERS = 10
MAX_VALUE_CHARS = 500


class ReviewResult(BaseModel):
    """What the state machine receives from REVIEWING (``$review``)."""

    incident_id: str
    outcome: Literal["APPROVED", "NEEDS_APPROVAL", "REJECTED"]
    end_reason: str
    verdicts: list[ActionVerdict]
    actions: list[RemediationAction]
    handover: list[HandoverStep] = Field(default_factory=list, description="the proposal's, for the approval page")
    rejected: list[RejectedAction]
    actions_digest: str
    risk: RiskLevel | None = None
    approval: ApprovalDecision | None = None
    summary: str
    ignored_verdicts: list[IgnoredVerdict] = Field(default_factory=list)
    history: list[str] = Field(default_factory=list, description="what the function's past incidents say (memory)")
    evidence: dict[str, Any] | None = Field(default=None, description="the critic's pointers: total, verified")
    review_ref: str | None = None
    metrics: dict[str, Any]


# -- the proposal, wherever it travelled ------------------------------------------------------------
def proposal_for(
    clients: AwsClients, store: RecordStore, incident_id: str, proposal_result: dict[str, Any] | None
) -> dict[str, Any]:
    """The proposal, inline or by reference (:func:`~incident_responder.state.store.step_result`)."""
    return step_result(
        clients,
        store,
        incident_id,
        kind="proposal",
        field="proposal",
        result=proposal_result,
        missing=ProposalUnavailableError,
    )


# -- one review ---------------------------------------------------------------------------------------
async def review(
    incident: Incident,
    diagnosis: dict[str, Any],
    actions: list[RemediationAction],
    *,
    model,
    limits: Limits,
    servers: list[McpServerConfig] | None = None,
    provider: ToolProvider | None = None,
    remaining_ms: Callable[[], int] | None = None,
    history: list[str] | None = None,
) -> AgentRun:
    """The critic's run over the remediation lookups; model and MCP errors are raised typed."""
    faults = [a.fault_type for a in actions] + list(diagnosis.get("fault_types") or [])
    return await run_agent_over_mcp(
        critic_spec(faults, actions),
        review_message(incident, diagnosis, actions, history),
        model=model,
        servers=servers,
        provider=provider,
        limits=limits,
        remaining_ms=remaining_ms,
        function_name=incident.function_name,
        function_arn=member_function_arn(incident),
    )


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _bounded(verdict: ActionVerdict) -> ActionVerdict:
    """A verdict small enough for the state: long reasons and values cut, at most MAX_POINTERS pointers."""
    return verdict.model_copy(
        update={
            "reasons": [_cut(r, MAX_REASON_CHARS) for r in verdict.reasons],
            "evidence": [
                p.model_copy(update={"value": _cut(p.value, MAX_VALUE_CHARS)}) for p in verdict.evidence[:MAX_POINTERS]
            ],
        }
    )


def summarize(decision: PolicyDecision, critic_summary: str | None, critic_finished: bool) -> str:
    counts = {v: sum(f.verdict == v for f in decision.verdicts) for v in Verdict}
    overrides = sum(bool(f.policy) for f in decision.verdicts)
    text = (
        f"{len(decision.verdicts)} action(s) reviewed: "
        + ", ".join(f"{counts[v]} {v.value}" for v in Verdict)
        + f"; policy overrode {overrides}."
    )
    if not critic_finished:
        text += " The critic did not finish: a person decides."
    if critic_summary:
        text += f' Critic (quoted): "{" ".join(critic_summary.split())}"'
    return _cut(text, 2000)


def run_review(
    incident: Incident,
    diagnosis: dict[str, Any],
    proposal_result: dict[str, Any] | None,
    *,
    model,
    store: RecordStore,
    limits: Limits,
    auto_approve: AutoApprove,
    auto_approve_iam_and_network: bool = False,
    servers: list[McpServerConfig] | None = None,
    provider: ToolProvider | None = None,
    clients: AwsClients | None = None,
    remaining_ms: Callable[[], int] | None = None,
    memory: Memory | None = None,
) -> tuple[ReviewResult, AgentRun | None]:
    """Review the proposal's actions, apply the policy floor, store the record (kind ``review``).

    A critic that ends without a review leaves every action to a person (the outcome is then at most
    NEEDS_APPROVAL); model and MCP errors are raised typed, for the state machine to retry or catch.
    The run is None when the proposal has no action to review.
    """
    clients = clients or AwsClients.shared()
    proposal = proposal_for(clients, store, incident.incident_id, proposal_result)
    actions = [RemediationAction.model_validate(a) for a in proposal.get("actions") or []]
    run: AgentRun | None = None
    if actions:
        try:
            run = anyio.run(
                lambda: review(
                    incident,
                    diagnosis,
                    actions,
                    model=model,
                    limits=limits,
                    servers=servers,
                    provider=provider,
                    remaining_ms=remaining_ms,
                    history=memory.notes(actions) if memory else None,
                )
            )
        except Exception as exc:
            # The run up to the error (its transcript) is kept with the record; the error goes on to the state
            # machine.
            full = {"incident": incident.model_dump(mode="json"), "diagnosis": diagnosis, "proposal": proposal}
            store.save_failed(clients, incident.incident_id, "review", exc, full)
            raise
    submission = run.payload if run is not None else None
    if run is not None and submission is not None:
        verdicts = submission.verdicts
        end_reason = run.end_reason
    elif run is not None:
        end_reason = run.end_reason
        reason = f"the critic did not finish ({end_reason}): a person decides"
        verdicts = [
            ActionVerdict(execution_order=a.execution_order, verdict=Verdict.NEEDS_HUMAN, reasons=[reason])
            for a in actions
        ]
    else:
        end_reason, verdicts = "nothing to review: the proposal has no actions", []
    decision = apply_review_policy(
        actions,
        verdicts,
        diagnosis,
        auto_approve=auto_approve,
        auto_approve_iam_and_network=auto_approve_iam_and_network,
        memory=memory,
    )
    report = (run.report if run is not None else None) or {}
    result = ReviewResult(
        incident_id=incident.incident_id,
        outcome=decision.outcome,
        end_reason=end_reason,
        verdicts=[_bounded(v) for v in decision.verdicts],
        actions=decision.actions,
        handover=proposal.get("handover") or [],
        rejected=[
            r.model_copy(update={"reasons": [_cut(x, MAX_REASON_CHARS) for x in r.reasons]}) for r in decision.rejected
        ],
        actions_digest=decision.actions_digest,
        risk=decision.risk,
        approval=decision.approval,
        summary=summarize(decision, submission.summary if submission else None, run is None or submission is not None),
        ignored_verdicts=[i.model_copy(update={"verdict": _bounded(i.verdict)}) for i in decision.ignored],
        history=[_cut(h, MAX_REASON_CHARS) for h in decision.history],
        evidence={k: report[k] for k in ("total", "verified", "grounded_ratio")} if report else None,
        metrics=_metrics(run, decision),
    )
    stored = store.save(
        clients,
        incident.incident_id,
        "review",
        summary=result.model_dump(mode="json"),
        chain=run.reasoning_chain() if run is not None else [],
        full={
            "incident": incident.model_dump(mode="json"),
            "diagnosis": diagnosis,
            "proposal": proposal,
            "critic": submission.model_dump(mode="json") if submission is not None else None,
            "decision": decision.model_dump(mode="json"),
            "result": result.model_dump(mode="json"),
            "evidence_report": report or None,
            "tool_results": run.tool_results if run is not None else [],
        },
        transcript=run.transcript if run is not None else [],
    )
    return result.model_copy(update={"review_ref": stored["artifact_uri"]}), run


def _metrics(run: AgentRun | None, decision: PolicyDecision) -> dict[str, Any]:
    counts = {f"verdicts_{v.value}": sum(f.verdict == v for f in decision.verdicts) for v in Verdict}
    base = {
        "llm_calls": 0,
        "tool_calls": 0,
        "total_tokens": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "tool_output_bytes": 0,
        "latency_ms": 0,
        "model_ms": 0,
        "tool_ms": 0,
    }
    if run is not None:
        base.update(
            llm_calls=run.llm_calls,
            tool_calls=run.tool_calls,
            total_tokens=run.usage.total_tokens,
            input_tokens=run.usage.input_tokens,
            output_tokens=run.usage.output_tokens,
            cache_read_tokens=run.usage.cache_read_tokens,
            cache_write_tokens=run.usage.cache_write_tokens,
            tool_output_bytes=run.tool_output_bytes,
            latency_ms=run.latency_ms,
            model_ms=run.model_ms,
            tool_ms=run.tool_ms,
        )
    return {**base, **counts, "policy_overrides": sum(bool(f.policy) for f in decision.verdicts)}
