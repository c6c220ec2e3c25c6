"""INVESTIGATING: ``get_incident_history``, the function's past incidents as the responder's own records tell them.

One GetItem on the function's ``history#<function_name>`` item (:mod:`incident_responder.memory.history`): the
incidents that ended within ``MemoryDays``, newest first, at most :data:`MAX_SHOWN`, each with its fault types,
catalogue entries, actions and how each ended, and whether the same fault came back after. Entries that fail
validation (an item edited in DynamoDB) are dropped and counted, never shown. Past incidents are a hypothesis to
check against this incident's own evidence, never a conclusion; and they never authorise anything.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import Field

from incident_responder.account.compact import Compact
from incident_responder.account.errors import describe_error
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts.history import ActionOutcome, PastIncident
from incident_responder.memory.history import parsed_time, past_incidents

MAX_SHOWN = 5
MAX_ACTIONS_SHOWN = 5
MAX_TARGET_CHARS = 160


class ShownAction(Compact):
    action_type: str
    target: str
    outcome: ActionOutcome


class ShownIncident(Compact):
    """One past incident: what was found, what was done and how it ended."""

    incident_id: str
    started_at: str
    ended_at: str
    status: str
    fault_types: list[str] = Field(default_factory=list)
    failure_modes: list[str] = Field(default_factory=list, description="catalogue entry ids")
    actions: list[ShownAction] = Field(default_factory=list)
    verified_at: str | None = Field(default=None, description="when its fix was verified (REMEDIATED)")
    rolled_back_reason: str | None = Field(default=None, description="the verification's words: why it was undone")
    decided_by: str | None = Field(default=None, description="who approved or rejected")
    handed_over: list[str] = Field(default_factory=list, description="fault types left to a person")
    report_key: str | None = Field(default=None, description="its report in the artifacts bucket")
    came_back_at: str | None = Field(default=None, description="a later incident with one of its faults started then")


class IncidentHistory(Compact):
    ALWAYS = frozenset({"incidents", "summary"})  # no past incident is a finding

    function_name: str
    window_days: int
    incidents: list[ShownIncident] = Field(default_factory=list, description=f"newest first, at most {MAX_SHOWN}")
    summary: str = ""
    dropped: int = Field(default=0, description="stored entries skipped as invalid (never shown)")
    error: str | None = None


def _shown(past: PastIncident, later: list[PastIncident]) -> ShownIncident:
    back = next(
        (p.started_at for p in later if set(p.fault_types) & set(past.fault_types)),
        None,
    )
    data = past.model_dump(mode="json")
    data["actions"] = [{**a, "target": a["target"][:MAX_TARGET_CHARS]} for a in data["actions"][:MAX_ACTIONS_SHOWN]]
    return ShownIncident.model_validate({**data, "came_back_at": back})


def summary_line(incidents: list[PastIncident], days: int) -> str:
    """One line: how many, and how the last one ended."""
    if not incidents:
        return f"no past incident of this function in the last {days} days"
    last = incidents[0]
    faults = ", ".join(last.fault_types) or "no fault type"
    how = {"verified": "fixed and verified", "rolled_back": "rolled back"}
    outcomes = sorted({how.get(a.outcome, a.outcome) for a in last.actions})
    done = f" ({'; '.join(outcomes)})" if outcomes else ""
    count = f"{len(incidents)} past incident{'s' if len(incidents) > 1 else ''} in the last {days} days"
    return f"{count}; the last ended {last.ended_at} {last.status}: {faults}{done}"


def get_incident_history(
    clients: AwsClients,
    table: str | None,
    lambda_name: str,
    *,
    days: int = 30,
    now: datetime | None = None,
    exclude: str | None = None,
) -> IncidentHistory:
    """The function's past incidents (``lambda_name``: the bare name the scope check returned)."""
    result = IncidentHistory(function_name=lambda_name, window_days=days)
    if not table:
        return result.model_copy(update={"error": "no incident-state table is configured: no history to read"})
    now = now or datetime.now(UTC)
    try:
        read = past_incidents(clients, table, lambda_name, now=now, days=days, limit=MAX_SHOWN, exclude=exclude)
    except Exception as exc:  # noqa: BLE001 - the error is itself evidence, as for the other tools
        return result.model_copy(update={"error": describe_error(exc)})
    ordered = sorted(read.incidents, key=lambda p: parsed_time(p.started_at))  # oldest first: what came after each
    shown = [
        _shown(p, [q for q in ordered if parsed_time(q.started_at) > parsed_time(p.ended_at)]) for p in read.incidents
    ]
    return result.model_copy(
        update={"incidents": shown, "summary": summary_line(read.incidents, days), "dropped": read.dropped}
    )
