"""A function's past incidents, read from its ``history#<function_name>`` item (one GetItem), validated and bounded.

An entry that does not validate (an item edited in DynamoDB, a field out of bounds) is dropped and counted, never
passed on: the tool, the review's rules and the pages see only what :class:`PastIncident` allows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pydantic import ValidationError

from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts.history import HISTORY_KEPT, PastIncident
from incident_responder.core.members import function_key
from incident_responder.state import keys


@dataclass(frozen=True)
class History:
    """The past incidents read (newest first) and how many stored entries were dropped as invalid."""

    incidents: list[PastIncident] = field(default_factory=list)
    dropped: int = 0
    version: int = 0  # the item's version (0: no item), for a conditional write of the next entry


def read_history(clients: AwsClients, table: str, function_name: str) -> History:
    """Every valid entry of the function's history item (at most :data:`HISTORY_KEPT`), newest first."""
    item = (
        clients.get("dynamodb")
        .get_item(
            TableName=table,
            Key={"incident_id": {"S": keys.history(function_key(clients, function_name))}},
            ConsistentRead=True,
        )
        .get("Item")
    )
    if not item:
        return History()
    version = int(item.get("version", {}).get("N", "0") or 0)
    try:
        raw = json.loads(item.get("entries_json", {}).get("S", "[]"))
    except ValueError:
        return History(dropped=1, version=version)
    if not isinstance(raw, list):
        return History(dropped=1, version=version)
    incidents: list[PastIncident] = []
    dropped = 0
    for entry in raw[:HISTORY_KEPT]:
        try:
            incidents.append(PastIncident.model_validate(entry))
        except ValidationError:
            dropped += 1
    dropped += max(0, len(raw) - HISTORY_KEPT)
    incidents.sort(key=lambda p: p.ended_at, reverse=True)
    return History(incidents=incidents, dropped=dropped, version=version)


def parsed_time(text: str) -> datetime:
    """An ISO 8601 time as the history holds it (``Z`` or an offset), as a datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def within(incidents: list[PastIncident], until: datetime, days: int) -> list[PastIncident]:
    """The incidents that ended in the ``days`` before ``until``."""
    since = until - timedelta(days=days)
    return [p for p in incidents if since <= parsed_time(p.ended_at) <= until]


def past_incidents(
    clients: AwsClients,
    table: str,
    function_name: str,
    *,
    now: datetime | None = None,
    days: int = 30,
    limit: int = 5,
    exclude: str | None = None,
) -> History:
    """The function's incidents that ended within ``days`` before ``now``, newest first, at most ``limit``
    (``exclude``: the incident asking, which is not its own past)."""
    now = now or datetime.now(UTC)
    read = read_history(clients, table, function_name)
    kept = [p for p in within(read.incidents, now, days) if p.incident_id != exclude]
    return History(incidents=kept[:limit], dropped=read.dropped, version=read.version)


def fixed_then_back(
    incidents: list[PastIncident], fault_type: str, started_at: datetime, hours: int
) -> PastIncident | None:
    """The last past incident whose fix of ``fault_type`` was verified within ``hours`` before ``started_at``: a
    fault back soon after a verified fix (a fix that does not stick is a symptom); None when there is none."""
    for past in incidents:
        verified = past.verified_at
        if (
            fault_type in past.fault_types
            and verified
            and timedelta(0) <= started_at - parsed_time(verified) <= timedelta(hours=hours)
        ):
            return past
    return None
