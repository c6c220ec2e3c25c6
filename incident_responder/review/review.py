"""REVIEWING: the critic agent judges each proposed action, then the approval policy decides who approves.

The ``review`` Lambda handler is a thin wrapper around :func:`run_review`. The critic's verdicts are
advice; :func:`apply_review_policy` is the deterministic floor it cannot lower. The outcome is
REJECTED (no action survives), APPROVED (automatically, only under ``AutoApprove=low``) or
NEEDS_APPROVAL (a person decides). Nothing here changes the account.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

import anyio
from pydantic import BaseModel, Field

from incident_responder.agent.evidence import verified_evidence_by_fault
from incident_responder.agent.graph import AgentRun, Limits, run_agent_over_mcp
from incident_responder.agent.tools import McpServerConfig, ToolProvider
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    VERDICT_STRICTNESS,
    ActionType,
    ActionVerdict,
    ApprovalDecision,
    Incident,
    RejectedAction,
    RemediationAction,
    RiskLevel,
    Verdict,
    actions_digest,
)
from incident_responder.proposal.guardrails import RISK_FOR_ACTION
from incident_responder.review.critic import critic_spec, review_message
from incident_responder.state.store import RecordStore, step_result

AutoApprove = Literal["none", "low"]
AUTO_APPROVER = "auto-approve (AutoApprove=low)"
# Changes to what the function may access or reach: a person approves them unless the deployment opts in.
ACCESS_ACTIONS = {ActionType.RESTORE_IAM_POLICY, ActionType.RESTORE_NETWORK_EGRESS}
# Always a person, whatever the deployment opts into: a key may have been disabled, or a secret's deletion
# scheduled, on purpose (a suspected compromise), which nothing the responder can read tells apart from a mistake.
PERSON_ONLY_ACTIONS = {
    ActionType.ENABLE_KMS_KEY: "enabling a KMS key needs a person: it may have been disabled on purpose",
    ActionType.RESTORE_SECRET: "cancelling a secret's deletion needs a person: it may have been scheduled on purpose",
}
RISK_ORDER = {"low": 0, "medium": 1, "high": 2}
# The review travels in the state machine's state (256 KB): the critic's prose is bounded there, whole in S3.
MAX_REASON_CHARS = 1000
MAX_POINTERS = 10
MAX_VALUE_CHARS = 500


class ProposalUnavailableError(LookupError):
    """The proposal is neither inline nor in the store (an ASL error name)."""


class IgnoredVerdict(BaseModel):
    verdict: ActionVerdict
    reason: str


class PolicyDecision(BaseModel):
    """What :func:`apply_review_policy` decides: one final verdict per action, and the outcome."""

    outcome: Literal["APPROVED", "NEEDS_APPROVAL", "REJECTED"]
    verdicts: list[ActionVerdict]
    actions: list[RemediationAction] = Field(description="the actions that survive (verdict other than reject)")
    rejected: list[RejectedAction]
    ignored: list[IgnoredVerdict]
    actions_digest: str
    risk: RiskLevel | None = Field(description="the highest risk among the surviving actions")
    approval: ApprovalDecision | None = None


class ReviewResult(BaseModel):
    """What the state machine receives from REVIEWING (``$review``)."""

    incident_id: str
    outcome: Literal["APPROVED", "NEEDS_APPROVAL", "REJECTED"]
    end_reason: str
    verdicts: list[ActionVerdict]
    actions: list[RemediationAction]
    rejected: list[RejectedAction]
    actions_digest: str
    risk: RiskLevel | None = None
    approval: ApprovalDecision | None = None
    summary: str
    ignored_verdicts: list[IgnoredVerdict] = Field(default_factory=list)
    evidence: dict[str, Any] | None = Field(default=None, description="the critic's pointers: total, verified")
    review_ref: str | None = None
    metrics: dict[str, Any]


# -- the policy floor -------------------------------------------------------------------------------
def effective_risk(action: RemediationAction) -> RiskLevel:
    """The stricter of the action's recorded risk and policy's risk for its type."""
    fixed = RISK_FOR_ACTION.get(action.action_type, "high")
    return max(action.risk_level, fixed, key=RISK_ORDER.__getitem__)


def _floor(verdict: ActionVerdict, critic: Verdict, floor: Verdict, rule: str) -> ActionVerdict:
    """``verdict`` raised to at least ``floor``; the rule is recorded when it overrides the critic's own verdict."""
    if VERDICT_STRICTNESS[floor] <= VERDICT_STRICTNESS[critic]:
        return verdict
    stricter = max(verdict.verdict, floor, key=VERDICT_STRICTNESS.__getitem__)
    return verdict.model_copy(update={"verdict": stricter, "policy": [*verdict.policy, rule]})


def apply_review_policy(
    actions: list[RemediationAction],
    verdicts: list[ActionVerdict],
    diagnosis: dict[str, Any],
    *,
    auto_approve: AutoApprove,
    auto_approve_iam_and_network: bool = False,
    now: datetime | None = None,
) -> PolicyDecision:
    """The deterministic floor under the critic's verdicts; it only ever makes a verdict stricter.

    - an action with no verdict -> needs_human;
    - approve without at least one verified evidence pointer -> needs_human;
    - IAM and network actions -> at least needs_human, unless ``auto_approve_iam_and_network``;
    - enabling a KMS key or cancelling a secret's deletion -> at least needs_human, always;
    - an action whose fault the diagnosis does not ground in verified evidence -> reject.

    Verdicts naming no proposed action, and second verdicts for one action, are ignored (and listed).
    Each rule that overrode the critic is recorded in the verdict's ``policy``. The outcome is REJECTED
    when no action survives, APPROVED (recorded as an automatic approval of exactly the surviving
    actions) only when ``auto_approve == "low"`` and every surviving action is approved and low risk
    (or an IAM / network restore with ``auto_approve_iam_and_network``), else NEEDS_APPROVAL.
    """
    orders = {a.execution_order for a in actions}
    given: dict[int, ActionVerdict] = {}
    ignored: list[IgnoredVerdict] = []
    for verdict in verdicts:
        verdict = verdict.model_copy(update={"policy": []})  # only this function writes policy
        if verdict.execution_order not in orders:
            ignored.append(IgnoredVerdict(verdict=verdict, reason="no proposed action has this execution_order"))
        elif verdict.execution_order in given:
            ignored.append(IgnoredVerdict(verdict=verdict, reason="a second verdict for this action: the first counts"))
        else:
            given[verdict.execution_order] = verdict
    grounded = verified_evidence_by_fault(diagnosis)

    final: list[ActionVerdict] = []
    for action in sorted(actions, key=lambda a: a.execution_order):
        order, fault = action.execution_order, str(action.fault_type)
        verdict = given.get(order)
        if verdict is None:
            rule = "no verdict from the critic for this action: a person decides"
            verdict = ActionVerdict(execution_order=order, verdict=Verdict.NEEDS_HUMAN, reasons=[rule], policy=[rule])
        critic = verdict.verdict
        if not any(p.verified for p in verdict.evidence):
            verdict = _floor(
                verdict, critic, Verdict.NEEDS_HUMAN, "an approval needs at least one verified evidence pointer"
            )
        if action.action_type in ACCESS_ACTIONS and not auto_approve_iam_and_network:
            verdict = _floor(
                verdict,
                critic,
                Verdict.NEEDS_HUMAN,
                "IAM and network changes need a person (AutoApproveIamAndNetwork is off)",
            )
        if action.action_type in PERSON_ONLY_ACTIONS:
            verdict = _floor(verdict, critic, Verdict.NEEDS_HUMAN, PERSON_ONLY_ACTIONS[action.action_type])
        if not grounded.get(fault):
            verdict = _floor(
                verdict,
                critic,
                Verdict.REJECT,
                f"the diagnosis has no verified evidence for {fault}: nothing is changed for it",
            )
        final.append(verdict)

    by_order = {a.execution_order: a for a in actions}
    surviving = [by_order[v.execution_order] for v in final if v.verdict != Verdict.REJECT]
    rejected = [
        RejectedAction(action=by_order[v.execution_order], reasons=v.policy + v.reasons)
        for v in final
        if v.verdict == Verdict.REJECT
    ]
    digest = actions_digest(surviving)
    risks = [effective_risk(a) for a in surviving]
    outcome: Literal["APPROVED", "NEEDS_APPROVAL", "REJECTED"] = "NEEDS_APPROVAL"
    approval = None
    if not surviving:
        outcome = "REJECTED"
    elif auto_approve == "low" and all(
        v.verdict == Verdict.APPROVE
        and (
            effective_risk(by_order[v.execution_order]) == "low"
            or (by_order[v.execution_order].action_type in ACCESS_ACTIONS and auto_approve_iam_and_network)
        )
        for v in final
        if v.verdict != Verdict.REJECT
    ):
        outcome = "APPROVED"
        approval = ApprovalDecision(
            decision="approve",
            decided_by=AUTO_APPROVER,
            decided_at=(now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            channel="auto",
            actions_digest=digest,
        )
    return PolicyDecision(
        outcome=outcome,
        verdicts=final,
        actions=surviving,
        rejected=rejected,
        ignored=ignored,
        actions_digest=digest,
        risk=max(risks, key=RISK_ORDER.__getitem__) if risks else None,
        approval=approval,
    )


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
) -> AgentRun:
    """The critic's run over the remediation lookups; model and MCP errors are raised typed."""
    faults = [a.fault_type for a in actions] + list(diagnosis.get("fault_types") or [])
    return await run_agent_over_mcp(
        critic_spec(faults),
        review_message(incident, diagnosis, actions),
        model=model,
        servers=servers,
        provider=provider,
        limits=limits,
        remaining_ms=remaining_ms,
        function_name=incident.function_name,
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
            )
        )
    submission = run.payload if run is not None else None
    if submission is not None:
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
    )
    report = (run.report if run is not None else None) or {}
    result = ReviewResult(
        incident_id=incident.incident_id,
        outcome=decision.outcome,
        end_reason=end_reason,
        verdicts=[_bounded(v) for v in decision.verdicts],
        actions=decision.actions,
        rejected=[
            r.model_copy(update={"reasons": [_cut(x, MAX_REASON_CHARS) for x in r.reasons]}) for r in decision.rejected
        ],
        actions_digest=decision.actions_digest,
        risk=decision.risk,
        approval=decision.approval,
        summary=summarize(decision, submission.summary if submission else None, run is None or submission is not None),
        ignored_verdicts=[i.model_copy(update={"verdict": _bounded(i.verdict)}) for i in decision.ignored],
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
