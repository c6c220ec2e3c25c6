"""REVIEWING: the approval policy, the deterministic floor under the critic's verdicts, and who approves.

The critic's verdicts are advice; :func:`apply_review_policy` only ever makes them stricter. The outcome is
REJECTED (no action survives), APPROVED (automatically, only under ``AutoApprove=low``) or NEEDS_APPROVAL
(a person decides).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from incident_responder.actions.registry import ACCESS_ACTIONS, PERSON_ONLY_ACTIONS, RISK_FOR_ACTION
from incident_responder.agent.evidence import verified_evidence_by_fault
from incident_responder.core.contracts import (
    VERDICT_STRICTNESS,
    ActionVerdict,
    ApprovalDecision,
    RejectedAction,
    RemediationAction,
    RiskLevel,
    Verdict,
    actions_digest,
)
from incident_responder.core.encoding import iso
from incident_responder.memory.rules import Memory, note

AutoApprove = Literal["none", "low"]
AUTO_APPROVER = "auto-approve (AutoApprove=low)"
RISK_ORDER = {"low": 0, "medium": 1, "high": 2}


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
    history: list[str] = Field(
        default_factory=list, description="what the function's past incidents say of each action (memory rules)"
    )


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
    memory: Memory | None = None,
) -> PolicyDecision:
    """The deterministic floor under the critic's verdicts; it only ever makes a verdict stricter.

    - an action with no verdict -> needs_human;
    - approve without at least one verified evidence pointer -> needs_human;
    - IAM and network actions -> at least needs_human, unless ``auto_approve_iam_and_network``;
    - enabling a KMS key or cancelling a secret's deletion -> at least needs_human, always;
    - an action whose fault the diagnosis does not ground in verified evidence -> reject;
    - with ``memory`` (the function's past incidents): the same action for the same fault rolled back within the
      window, or the fault back soon after a verified fix -> at least needs_human
      (:mod:`incident_responder.memory.rules`); a fix verified before is noted in ``history``, relaxing nothing.

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

    history: list[str] = []
    final: list[ActionVerdict] = []
    for action in sorted(actions, key=lambda a: a.execution_order):
        order, fault = action.execution_order, str(action.fault_type)
        if order in given:
            verdict = given[order]
        else:
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
        for finding in memory.findings(fault, action.action_type.value) if memory else []:
            history.append(note(action, finding))
            if finding.needs_human:
                verdict = _floor(verdict, critic, Verdict.NEEDS_HUMAN, f"{finding.text}: a person decides")
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
            decided_at=iso(now or datetime.now(UTC), "milliseconds"),
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
        history=history,
    )
