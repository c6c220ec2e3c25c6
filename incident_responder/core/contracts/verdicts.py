"""REVIEWING: the critic's verdict on each action, and what it submits."""

from __future__ import annotations

from enum import StrEnum

from pydantic import ConfigDict, Field

from incident_responder.core.contracts.base import Contract
from incident_responder.core.contracts.evidence import EvidencePointer


class Verdict(StrEnum):
    """The critic's verdict on one action; deterministic policy may only make it stricter."""

    APPROVE = "approve"
    NEEDS_HUMAN = "needs_human"
    REJECT = "reject"


VERDICT_STRICTNESS = {Verdict.APPROVE: 0, Verdict.NEEDS_HUMAN: 1, Verdict.REJECT: 2}


class ActionVerdict(Contract):
    """One action's verdict, naming the action by its ``execution_order``, with reasons citing evidence."""

    model_config = ConfigDict(extra="forbid")

    execution_order: int = Field(ge=1, description="the execution_order of the action judged")
    verdict: Verdict
    reasons: list[str] = Field(min_length=1, max_length=10, description="why, each citing what the evidence shows")
    evidence: list[EvidencePointer] = Field(
        default_factory=list, description="pointers into this review's tool results; 'verified' is set by the system"
    )
    policy: list[str] = Field(default_factory=list, description="set by the system: where policy overrode the critic")


class ReviewSubmission(Contract):
    """The ``submit_review`` arguments: one verdict per proposed action, and a summary."""

    model_config = ConfigDict(extra="forbid")

    verdicts: list[ActionVerdict] = Field(default_factory=list)
    summary: str = Field(default="", max_length=2000)
