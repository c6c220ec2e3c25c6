"""An execution that ended without verifying or undoing its own change (stopped, timed out, failed past its
catches, its task crashed): hand the change over to a person, with the ledger, and free its resources.

Nothing will verify that change now, and undoing it unattended is not safe either: the end was often a
person's deliberate act (StopExecution), and the account may have moved since. So reconcile
(:mod:`handlers.reconcile`) calls :func:`hand_over` on every execution that ended FAILED, TIMED_OUT or ABORTED:
each step of the ledger that may have changed the account and was not undone is listed on the operator topic
with the prior state it recorded, its fencing token and how to undo it (``responder rollback``: fenced, so it
never undoes a change another incident made since), and the incident's leases are released so that other
incidents may act. The alarm goes out only for an incident that was acting (REMEDIATING, VERIFYING,
ROLLING_BACK) when its execution ended; one that reached REMEDIATION_FAILED through the state machine was
alarmed there.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from incident_responder.core.aws import AwsClients
from incident_responder.notify.notifications import subject_line
from incident_responder.remediation import lease as leases
from incident_responder.remediation.ledger import Ledger, LedgerEntry

# What may have changed the account and is not undone: applied, recorded (the write may have happened), or an
# undo that failed.
UNVERIFIED = ("recorded", "applied", "undo_failed")


class HandOver(BaseModel):
    released: list[str] = Field(default_factory=list)  # the leases given back
    unverified: list[int] = Field(default_factory=list)  # the ledger steps left for a person
    alarmed: bool = False


def hand_over(
    clients: AwsClients,
    *,
    table: str,
    incident_id: str,
    function_name: str,
    reason: str,
    alarm: bool,
    topic_arn: str | None,
) -> HandOver:
    """Free what the incident leased; with ``alarm``, tell the operators of every change it left unverified."""
    ledger = Ledger(clients, table, incident_id)
    head = ledger.head()
    if head is None:
        return HandOver()
    left = [e for e in ledger.entries(head) if e.progress in UNVERIFIED]
    released = leases.release_all(clients, table, head["resources"], incident_id)
    alarmed = bool(alarm and left and topic_arn)
    if alarmed:
        clients.get("sns").publish(
            TopicArn=topic_arn,
            Subject=alarm_subject(function_name, incident_id),
            Message=message(incident_id, function_name, reason, left),
        )
    return HandOver(released=released, unverified=[e.execution_order for e in left], alarmed=alarmed)


def alarm_subject(function_name: str, incident_id: str) -> str:
    return subject_line(f"UNVERIFIED CHANGE, needs a person: {function_name} ({incident_id})")


def message(incident_id: str, function_name: str, reason: str, left: list[LedgerEntry]) -> str:
    lines = [
        f"Incident {incident_id} changed the account and its execution ended before the change was verified or "
        f"undone ({reason}). Nothing will verify or undo it now: a person decides. Its leases are released.",
        "",
        f"Undo it with `responder rollback {incident_id}` (fenced: a step another incident has changed since is "
        "left alone and reported), or keep it. Each step it may have applied, with the state recorded before it:",
    ]
    for entry in sorted(left, key=lambda e: e.execution_order):
        lines.append(
            f"  {entry.execution_order}. {entry.action.action_type.value} on {entry.action.target_resource}: "
            f"{entry.progress}{f' ({entry.error[:200]})' if entry.error else ''}; fencing tokens "
            f"{json.dumps(entry.fences, sort_keys=True)}"
        )
        lines.append(f"     prior: {_short(entry.prior)}")
    lines.append(
        f"The undo ledger: items remediation#{incident_id}#N in the incident-state table (function {function_name})."
    )
    return "\n".join(lines)


def _short(state: dict[str, Any], limit: int = 600) -> str:
    text = json.dumps(state, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."
