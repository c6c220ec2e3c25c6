"""REMEDIATING and ROLLING_BACK: what applying and undoing did, step by step (the remediate function's outputs)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ApplyOutcome(BaseModel):
    """What applying one approved action did (``ApplyResult.steps``, the stored result's field name)."""

    execution_order: int
    action_type: str
    target_resource: str
    # already_applied: by an earlier attempt of this task; already_restored: the resource was already in the state
    # the action sets (nothing written, nothing to undo).
    status: Literal["applied", "already_applied", "already_restored", "failed", "not_attempted"]
    detail: str = ""
    error: str | None = None


class ApplyResult(BaseModel):
    outcome: Literal["APPLIED", "FAILED"]
    steps: list[ApplyOutcome] = Field(default_factory=list)
    failed_step: int | None = None
    error: str | None = None
    finished_at: str
    resources: list[str] = Field(default_factory=list)  # leased for these actions (lease#<resource>)

    @property
    def applied(self) -> list[ApplyOutcome]:
        """The steps whose change is in place: verification checks each."""
        return [s for s in self.steps if s.status in ("applied", "already_applied", "already_restored")]


class UndoOutcome(BaseModel):
    """What undoing one ledger entry did (``RollbackResult.steps``)."""

    execution_order: int
    action_type: str
    target_resource: str
    status: Literal["undone", "not_applied", "undo_failed"]
    detail: str = ""
    error: str | None = None


class RollbackResult(BaseModel):
    outcome: Literal["ROLLED_BACK", "ROLLBACK_FAILED"]
    steps: list[UndoOutcome] = Field(default_factory=list)
    error: str | None = None
