"""Memory: what the responder recorded of a function's past incidents (its own records, never a model's prose).

One :class:`PastIncident` per ended incident, kept newest first on the function's ``history#<function_name>``
item in the incident-state table (:mod:`incident_responder.state.keys`). Every field is an id, an enum, a time or a
bounded string taken from a deterministic record (the state item, the proposal and review records, the remediation
ledger, the approval record): an item edited in DynamoDB that breaks these bounds is dropped on read, never passed on.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from incident_responder.core.contracts.base import Contract
from incident_responder.core.contracts.faults import ActionType, FaultType
from incident_responder.core.contracts.incident import INCIDENT_ID_PATTERN
from incident_responder.core.status import Status

# How many ended incidents a function's history item keeps, newest first (older ones fall off at each write).
HISTORY_KEPT = 20
# An ISO 8601 time in UTC as the records hold it (seconds, optional fraction, Z or +00:00).
TIME_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|\+00:00)$"

ActionOutcome = Literal["verified", "rolled_back", "rejected", "not_applied", "failed"]


class PastAction(Contract):
    """One action of a past incident and how it ended."""

    model_config = ConfigDict(extra="forbid")

    action_type: ActionType
    target: str = Field(min_length=1, max_length=2048)
    outcome: ActionOutcome


class PastIncident(Contract):
    """One ended incident of a function, as the responder's own records tell it."""

    model_config = ConfigDict(extra="forbid")

    incident_id: str = Field(pattern=INCIDENT_ID_PATTERN, max_length=80)
    started_at: str = Field(pattern=TIME_PATTERN)
    ended_at: str = Field(pattern=TIME_PATTERN)
    status: Status
    fault_types: list[FaultType] = Field(default_factory=list, max_length=20)
    failure_modes: list[str] = Field(default_factory=list, max_length=20)
    actions: list[PastAction] = Field(default_factory=list, max_length=10)
    verified_at: str | None = Field(default=None, pattern=TIME_PATTERN)
    # Why the change was undone: the verification's or the rollback's own words (deterministic code), bounded.
    rolled_back_reason: str | None = Field(default=None, max_length=300)
    # Who approved or rejected (the approval record's decider: a person, or "auto").
    decided_by: str | None = Field(default=None, max_length=256)
    handed_over: list[FaultType] = Field(default_factory=list, max_length=20)
    # The S3 key of its report in the artifacts bucket (what the report, the page and the notice link to).
    report_key: str | None = Field(default=None, max_length=512)
