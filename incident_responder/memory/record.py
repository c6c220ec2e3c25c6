"""An ended incident remembered: one :class:`PastIncident` prepended to its function's ``history#<function_name>``.

The report step (:func:`incident_responder.reporting.delivery.deliver`) calls :func:`remember` at every end with
what it read from the stores for the report (the state item, the diagnosis, proposal and review records, the undo
ledger, the approval, verification and rollback the state item holds): enums, ids, times and the deterministic
verification's or rollback's own words. The model's prose (root cause, reasoning) is never copied.

The write is conditional on the item's ``version``: two incidents of one function ending at once both land (the
loser reads again and retries). An incident already in the history is replaced, not added twice (the report
function's asynchronous invocation may be retried).
"""

from __future__ import annotations

import json
import random
import time
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError
from pydantic import ValidationError

from incident_responder.core.contracts.faults import ActionType, FaultType
from incident_responder.core.contracts.history import HISTORY_KEPT, ActionOutcome, PastAction, PastIncident
from incident_responder.core.encoding import iso, read_time
from incident_responder.core.members import function_key
from incident_responder.core.status import TERMINAL_STATUSES, Status
from incident_responder.memory.history import read_history
from incident_responder.state import keys

MEMORY_TTL_DAYS = 90  # the stack's MemoryTtlDays: how long a function's history outlives its last write
WRITE_ATTEMPTS = 8  # each conflict is another incident's write landing: a few suffice
# Remembered: an ended incident, except one the circuit breaker suppressed (nothing was looked at).
REMEMBERED = TERMINAL_STATUSES - {Status.SUPPRESSED}
_FAULTS = {f.value for f in FaultType}
_ACTIONS = {a.value for a in ActionType}
# How a step of the undo ledger ended, as the history names it (applied: verified only when the incident was).
_LEDGER_OUTCOME: dict[str, ActionOutcome] = {
    "undone": "rolled_back",
    "failed": "failed",
    "undo_failed": "failed",
    "recorded": "not_applied",
}


def _time(value: Any) -> str | None:
    """A stored time as the history holds it (ISO 8601 UTC, microseconds), or None when it is not one."""
    when = read_time(value)
    return iso(when, "microseconds") if when else None


def _faults(values: Any) -> list[FaultType]:
    return list(dict.fromkeys(FaultType(v) for v in values or [] if isinstance(v, str) and v in _FAULTS))[:20]


def _actions(detail: dict[str, Any], status: str) -> list[PastAction]:
    """Each proposed action and how it ended: the ledger's step when it ran, else rejected or not applied."""
    ran = {e.get("execution_order"): e for e in detail.get("ledger") or []}
    review = detail.get("review") or {}
    turned_down = {(r.get("action") or {}).get("execution_order") for r in review.get("rejected") or []}
    found: list[PastAction] = []
    proposed = (detail.get("proposal") or {}).get("actions") or []
    for action in proposed + [
        e.get("action") or {} for o, e in ran.items() if o not in {a.get("execution_order") for a in proposed}
    ]:
        action_type, order = action.get("action_type"), action.get("execution_order")
        if action_type not in _ACTIONS:
            continue
        step = ran.get(order)
        outcome: ActionOutcome
        if step is not None and step.get("progress") == "applied":
            outcome = "verified" if status == Status.REMEDIATED else "failed"
        elif step is not None:
            outcome = _LEDGER_OUTCOME.get(str(step.get("progress")), "failed")
        elif order in turned_down or status == Status.REJECTED:
            outcome = "rejected"
        else:
            outcome = "not_applied"
        target = str(action.get("target_resource") or "-")[:2048]
        found.append(PastAction(action_type=ActionType(action_type), target=target, outcome=outcome))
    return found[:10]


def past_incident(detail: dict[str, Any], report_key: str | None, now: datetime | None = None) -> PastIncident | None:
    """The history's entry for an ended incident, from :func:`incident_responder.reporting.report.collect`'s
    ``detail`` (what the stores hold); None when it is not one to remember (not ended, suppressed, unreadable)."""
    status = detail.get("status")
    if status not in REMEMBERED:
        return None
    timings = detail.get("timings") or {}
    started = _time(timings.get("received_at")) or _time(timings.get("created_at"))
    ended = _time(timings.get("ended_at")) or iso(now or datetime.now(UTC), "microseconds")
    diagnosis = detail.get("diagnosis") or {}
    approval = detail.get("approval") or {}
    rollback = detail.get("rollback") or {}
    proposal = detail.get("proposal") or {}
    modes = [m for m in diagnosis.get("failure_modes") or [] if isinstance(m, str)]
    try:
        return PastIncident(
            incident_id=detail["incident_id"],
            started_at=started or ended,
            ended_at=ended,
            status=Status(status),
            fault_types=_faults(diagnosis.get("fault_types")),
            failure_modes=[m[:80] for m in modes][:20],
            actions=_actions(detail, status),
            verified_at=_time(timings.get("remediated_at")) if status == Status.REMEDIATED else None,
            rolled_back_reason=str(rollback["rollback_reason"])[:300] if rollback.get("rollback_reason") else None,
            decided_by=str(approval.get("approved_by") or approval.get("rejected_by") or "")[:256] or None,
            handed_over=_faults(proposal.get("unresolvable_faults")),
            report_key=report_key,
        )
    except (KeyError, ValidationError):
        return None


def _conflict(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


def remember(
    clients: Any,
    table: str,
    function_name: str,
    entry: PastIncident,
    *,
    ttl_days: int = MEMORY_TTL_DAYS,
    now: float | None = None,
) -> int:
    """Prepend ``entry`` to the function's history (at most :data:`HISTORY_KEPT`, newest first) with a write
    conditional on the version read; a conflict (another incident's end) reads again and retries. The version
    written."""
    ddb = clients.get("dynamodb")
    for attempt in range(WRITE_ATTEMPTS):
        read = read_history(clients, table, function_name)
        kept = [entry] + [p for p in read.incidents if p.incident_id != entry.incident_id]
        kept.sort(key=lambda p: p.ended_at, reverse=True)
        version = read.version + 1
        condition = (
            {"ConditionExpression": "attribute_not_exists(version)"}  # no item yet (or one edited without it)
            if read.version == 0
            else {
                "ConditionExpression": "version = :seen",
                "ExpressionAttributeValues": {":seen": {"N": str(read.version)}},
            }
        )
        item = {
            "incident_id": {"S": keys.history(function_key(clients, function_name))},
            "function_name": {"S": function_name},
            "entries_json": {"S": json.dumps([p.model_dump(mode="json") for p in kept[:HISTORY_KEPT]])},
            "version": {"N": str(version)},
            "expires_at": {"N": str(int((now or time.time()) + ttl_days * 86400))},
        }
        try:
            ddb.put_item(TableName=table, Item=item, **condition)
            return version
        except ClientError as exc:
            if not _conflict(exc) or attempt == WRITE_ATTEMPTS - 1:
                raise
            time.sleep(random.uniform(0, 0.05 * (attempt + 1)))  # jittered: the writers part
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises
