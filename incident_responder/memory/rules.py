"""What a function's past incidents change about an action under review: deterministic rules, never relaxing.

Applied in the approval policy's floor (:func:`incident_responder.review.policy.apply_review_policy`), after the
critic: a rule can only raise an action to NEEDS_HUMAN, and a note (a fix verified before) changes nothing.

- the same action for the same fault rolled back within the window -> a person decides ("rolled back last time");
- the fault back within ``RecurrenceHours`` after a verified fix -> a person decides (a fix that does not stick is a
  symptom: re-applying it blindly hides the cause);
- the same fix verified before -> a note ("fixed this way N times, last verified at ...").

Every word comes from the history item (:class:`incident_responder.core.contracts.PastIncident`: ids, enums, times
and the verification's or rollback's own bounded text), never from a model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from incident_responder.core.contracts.history import PastIncident
from incident_responder.core.encoding import read_time
from incident_responder.memory.history import fixed_then_back, parsed_time, read_history, within

MEMORY_DAYS = 30  # the window past incidents count in (the stack's MemoryDays)
RECURRENCE_HOURS = 24  # a fault back this soon after a verified fix goes to a person (the stack's RecurrenceHours)
MAX_REASON_SHOWN = 200


@dataclass(frozen=True)
class MemoryFinding:
    """One thing the history says about an action: ``needs_human`` raises it to a person, else it is a note."""

    text: str
    needs_human: bool


def findings_for(
    fault_type: str,
    action_type: str,
    incidents: list[PastIncident],
    *,
    started_at: datetime,
    days: int = MEMORY_DAYS,
    recurrence_hours: int = RECURRENCE_HOURS,
) -> list[MemoryFinding]:
    """What ``incidents`` (one function's history, newest first) say of ``action_type`` for ``fault_type`` on an
    incident of that function that started at ``started_at``."""
    recent = within(incidents, started_at, days)
    found: list[MemoryFinding] = []
    same = [p for p in recent if fault_type in p.fault_types]
    rolled_back = next(
        (p for p in same if any(a.action_type == action_type and a.outcome == "rolled_back" for a in p.actions)), None
    )
    if rolled_back is not None:
        why = (rolled_back.rolled_back_reason or "no reason recorded")[:MAX_REASON_SHOWN]
        found.append(MemoryFinding(f"rolled back last time ({rolled_back.ended_at}: {why})", needs_human=True))
    back = fixed_then_back(same, fault_type, started_at, recurrence_hours)
    if back is not None and back.verified_at:
        hours = max(1, math.ceil((started_at - parsed_time(back.verified_at)).total_seconds() / 3600))
        found.append(
            MemoryFinding(
                f"fixed at {back.verified_at} and back within {hours} h: a fix that does not stick is a symptom",
                needs_human=True,
            )
        )
    verified = [
        p
        for p in same
        if p.verified_at and any(a.action_type == action_type and a.outcome == "verified" for a in p.actions)
    ]
    if verified:
        last = max(p.verified_at or "" for p in verified)
        times = f"{len(verified)} time" + ("s" if len(verified) > 1 else "")
        found.append(MemoryFinding(f"fixed this way {times}, last verified at {last}", needs_human=False))
    return found


@dataclass(frozen=True)
class Memory:
    """What the review's floor knows of a function's past: its history (read once) and the incident's start."""

    function_name: str
    incidents: list[PastIncident]
    started_at: datetime
    days: int = MEMORY_DAYS
    recurrence_hours: int = RECURRENCE_HOURS

    def findings(self, fault_type: str, action_type: str) -> list[MemoryFinding]:
        return findings_for(
            fault_type,
            action_type,
            self.incidents,
            started_at=self.started_at,
            days=self.days,
            recurrence_hours=self.recurrence_hours,
        )

    def notes(self, actions: list[Any]) -> list[str]:
        """What the history says of each action (``RemediationAction``s), one line each (:func:`note`)."""
        return [note(a, f) for a in actions for f in self.findings(str(a.fault_type), a.action_type.value)]


def note(action: Any, finding: MemoryFinding) -> str:
    """One finding about one action (a ``RemediationAction``), as the critic, the review and the approval page read it."""
    return f"action {action.execution_order} ({action.action_type.value}): {finding.text}"


def started_at(detected_at: str | None) -> datetime:
    """When the incident started (its alert's time, UTC when it names no zone); now when that is not a readable time."""
    return read_time(detected_at, naive_is_utc=True) or datetime.now(UTC)


def read_memory(
    clients: Any,
    table: str,
    function_name: str,
    *,
    incident_id: str,
    started_at: datetime,
    days: int = MEMORY_DAYS,
    recurrence_hours: int = RECURRENCE_HOURS,
) -> Memory:
    """The function's history for the review (one GetItem; invalid entries dropped), the incident itself left out."""
    read = read_history(clients, table, function_name)
    past = [p for p in read.incidents if p.incident_id != incident_id]
    return Memory(function_name, past, started_at, days, recurrence_hours)
