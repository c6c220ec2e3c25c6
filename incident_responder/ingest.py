"""From one alert to at most one incident: validate, group, start.

Each alert ends in exactly one outcome:

``ignored``
    An alarm's change into OK or INSUFFICIENT_DATA: no incident, and nothing wrong with it either (alarms
    commonly notify the same topic of every change). Logged and counted, never dead-lettered. It does not
    end an open incident of the same alarm: the responder's own verification says whether a fix held.
``rejected``
    It means nothing: malformed, a time that is no time, a function that was never onboarded, an alarm of
    another account or Region than the stack's, an alarm over several functions' metrics, or an alarm on a
    queue that no onboarded function reads (or that several do: it says which). It goes to
    the dead-letter queue with the reason and starts nothing (so it spends no budget).
``started``
    The first alert of its group: the incident's lifecycle execution is started.
``duplicate``
    The same alert again (SNS delivers at least once), or a retry of one whose start was interrupted:
    the execution is made sure to exist, nothing new starts.
``attached``
    Another alert for the same function and fault signature within the grouping window: it is
    recorded on the group of the incident already under way, and starts nothing.

An alarm on a queue names no function: the onboarded function whose event source mapping reads the
queue is found in the baseline table (each baseline lists its ``event_sources``), and the incident
says so in ``resolved_from``.

The group item (``group#<function>#<signature digest>`` in the incident-state table) is claimed with
a conditional write, so of any number of concurrent copies exactly one starts the execution; the
incident it stores lets a retry finish a start that was interrupted.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Literal

from pydantic import BaseModel

from incident_responder.alerts import (
    AlertIgnoredError,
    Home,
    MalformedAlertError,
    QueueAlarm,
    fault_signature,
    read_alert,
)
from incident_responder.aws import AwsClients
from incident_responder.baseline import baseline_table_name, onboarded_arn
from incident_responder.contracts import Incident
from incident_responder.lifecycle import start_incident

# Alerts attached to a group are listed up to this many (the item stays far below 400 KB); beyond, counted.
MAX_LISTED_ALERTS = 500


class IngestOutcome(BaseModel):
    outcome: Literal["started", "duplicate", "attached", "ignored", "rejected"]
    incident_id: str | None = None
    alert_incident_id: str | None = None
    execution_arn: str | None = None
    reason: str | None = None
    alerts_in_group: int | None = None
    resolved_from: str | None = None


class UnresolvedAlertError(MalformedAlertError):
    """An alarm on a queue that no onboarded function reads, or that several do: it starts nothing."""


def functions_reading(clients: AwsClients, source_arn: str, table: str | None = None) -> list[str]:
    """The onboarded functions whose baseline lists ``source_arn`` among the event sources that invoke them.

    A scan of the baseline table (one small item per onboarded function) reading only the two attributes
    the ingest role may read; AWS errors propagate (the handler's invocation is retried).
    """
    names: list[str] = []
    kwargs: dict[str, Any] = {
        "TableName": table or baseline_table_name(),
        "FilterExpression": "contains(event_sources, :source)",
        "ProjectionExpression": "function_name, event_sources",
        "ExpressionAttributeValues": {":source": {"S": source_arn}},
        "ConsistentRead": True,  # a function onboarded a moment ago counts
    }
    for page in clients.get("dynamodb").get_paginator("scan").paginate(**kwargs):
        names += [item["function_name"]["S"] for item in page.get("Items", [])]
    return sorted(set(names))


def resolve_queue_alarm(clients: AwsClients, pending: QueueAlarm, baseline_table: str | None = None) -> Incident:
    """The incident of an alarm on a queue: its function is the one onboarded function that reads the queue."""
    functions = functions_reading(clients, pending.queue_arn, baseline_table)
    alarm = f"alarm {pending.alarm.AlarmName!r} watches queue {pending.queue_name} ({pending.queue_arn})"
    if not functions:
        raise UnresolvedAlertError(
            f"{alarm}, which no onboarded function reads through an event source mapping: onboard the function "
            "that consumes it (responder onboard <function>), or restore its mapping and onboard it again"
        )
    if len(functions) > 1:
        raise UnresolvedAlertError(
            f"{alarm}, which several onboarded functions read ({', '.join(functions)}): the alarm does not say "
            "which one, so none is chosen; alarm on each function's own metrics instead"
        )
    return pending.incident(functions[0], f"queue {pending.queue_name} via its event source mapping")


def incident_from_alert(
    clients: AwsClients, message: str | dict[str, Any], baseline_table: str | None = None, home: Home | None = None
) -> Incident:
    """:func:`~incident_responder.alerts.parse_alert`, with an alarm on a queue resolved to its function.

    Raises AlertIgnoredError (a change into OK or INSUFFICIENT_DATA) or MalformedAlertError (an
    :class:`UnresolvedAlertError` for a queue no single function reads).
    """
    alert = read_alert(message, home=home)
    return resolve_queue_alarm(clients, alert, baseline_table) if isinstance(alert, QueueAlarm) else alert


def group_key(incident: Incident) -> str:
    digest = hashlib.sha256(fault_signature(incident).encode()).hexdigest()[:16]
    return f"group#{incident.function_name}#{digest}"


def ingest_alert(
    clients: AwsClients,
    message: str | dict[str, Any],
    *,
    state_machine_arn: str,
    state_table: str,
    baseline_table: str,
    window_seconds: int,
    now: float | None = None,
) -> IngestOutcome:
    try:
        # The stack's account and Region are its state machine's: an alarm from elsewhere is not ours.
        incident = incident_from_alert(clients, message, baseline_table, Home.of(state_machine_arn))
    except AlertIgnoredError as exc:
        return IngestOutcome(outcome="ignored", reason=str(exc))
    except MalformedAlertError as exc:
        return IngestOutcome(outcome="rejected", reason=str(exc))
    # A function found through its event source mapping was found in the baseline table: it is onboarded.
    if incident.resolved_from is None and onboarded_arn(clients, incident.function_name, baseline_table) is None:
        return IngestOutcome(
            outcome="rejected",
            alert_incident_id=incident.incident_id,
            reason=f"function {incident.function_name!r} is not onboarded (no recorded baseline): "
            f"run `responder onboard {incident.function_name}` first",
        )
    now = time.time() if now is None else now
    ddb = clients.get("dynamodb")
    key = group_key(incident)
    try:
        ddb.put_item(
            TableName=state_table,
            Item={
                "incident_id": {"S": key},
                "group_incident_id": {"S": incident.incident_id},
                "function_name": {"S": incident.function_name},
                "signature": {"S": fault_signature(incident)[:300]},
                "incident_json": {"S": json.dumps(incident.model_dump(mode="json", exclude_none=True))},
                "first_alert_at": {"N": str(int(now))},
                "window_ends_at": {"N": str(int(now) + window_seconds)},
                # Kept a day past the window, then DynamoDB's TTL removes it.
                "expires_at": {"N": str(int(now) + window_seconds + 86400)},
            },
            # A new group when there is none for this fault, or the last one's window has closed.
            ConditionExpression="attribute_not_exists(incident_id) OR window_ends_at < :now",
            ExpressionAttributeValues={":now": {"N": str(int(now))}},
        )
    except ddb.exceptions.ConditionalCheckFailedException:
        return _join_group(clients, state_table, key, incident, state_machine_arn, now)
    return _start(clients, state_table, key, incident, state_machine_arn, "started")


def _start(
    clients: AwsClients, state_table: str, key: str, incident: Incident, state_machine_arn: str, outcome: str
) -> IngestOutcome:
    result = start_incident(clients, state_machine_arn, incident)
    clients.get("dynamodb").update_item(
        TableName=state_table,
        Key={"incident_id": {"S": key}},
        UpdateExpression="SET execution_arn = :arn",
        ExpressionAttributeValues={":arn": {"S": result.execution_arn or ""}},
    )
    return IngestOutcome(
        outcome="duplicate" if result.duplicate else outcome,  # type: ignore[arg-type]
        incident_id=incident.incident_id,
        alert_incident_id=incident.incident_id,
        execution_arn=result.execution_arn,
        alerts_in_group=1,
        resolved_from=incident.resolved_from,
    )


def _join_group(
    clients: AwsClients, state_table: str, key: str, incident: Incident, state_machine_arn: str, now: float
) -> IngestOutcome:
    ddb = clients.get("dynamodb")
    group = ddb.get_item(TableName=state_table, Key={"incident_id": {"S": key}}, ConsistentRead=True)["Item"]
    owner = Incident.model_validate_json(group["incident_json"]["S"])
    if owner.incident_id == incident.incident_id:
        # The same alert again. If the first delivery claimed the group but never started its execution
        # (it crashed in between), this one finishes the job: starting is idempotent by name.
        # Counted as a duplicate either way: the delivery that claimed the group counts the start.
        if "execution_arn" not in group:
            return _start(clients, state_table, key, owner, state_machine_arn, "duplicate")
        return IngestOutcome(
            outcome="duplicate",
            incident_id=owner.incident_id,
            alert_incident_id=incident.incident_id,
            execution_arn=group["execution_arn"]["S"],
            alerts_in_group=_count(group),
            resolved_from=incident.resolved_from,
        )
    try:
        # A set: the same attached alert delivered twice is listed once.
        updated = ddb.update_item(
            TableName=state_table,
            Key={"incident_id": {"S": key}},
            UpdateExpression="ADD attached_alerts :alert SET last_alert_at = :now",
            ConditionExpression="attribute_not_exists(attached_alerts) OR size(attached_alerts) < :cap",
            ExpressionAttributeValues={
                ":alert": {"SS": [incident.incident_id]},
                ":now": {"N": str(int(now))},
                ":cap": {"N": str(MAX_LISTED_ALERTS)},
            },
            ReturnValues="ALL_NEW",
        )["Attributes"]
    except ddb.exceptions.ConditionalCheckFailedException:
        updated = ddb.update_item(
            TableName=state_table,
            Key={"incident_id": {"S": key}},
            UpdateExpression="ADD attached_unlisted :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
            ReturnValues="ALL_NEW",
        )["Attributes"]
    if "execution_arn" not in group:
        _start(clients, state_table, key, owner, state_machine_arn, "attached")
    return IngestOutcome(
        outcome="attached",
        incident_id=owner.incident_id,
        alert_incident_id=incident.incident_id,
        execution_arn=updated.get("execution_arn", {}).get("S"),
        alerts_in_group=_count(updated),
        resolved_from=incident.resolved_from,
    )


def _count(group: dict[str, Any]) -> int:
    return 1 + len(group.get("attached_alerts", {}).get("SS", [])) + int(group.get("attached_unlisted", {}).get("N", 0))


def incident_for_alert(clients: AwsClients, state_table: str, incident: Incident) -> str:
    """The incident an alert belongs to: its group's (when grouped), else its own."""
    group = (
        clients.get("dynamodb")
        .get_item(TableName=state_table, Key={"incident_id": {"S": group_key(incident)}}, ConsistentRead=True)
        .get("Item")
    )
    if group and (
        group["group_incident_id"]["S"] == incident.incident_id
        or incident.incident_id in group.get("attached_alerts", {}).get("SS", [])
    ):
        return group["group_incident_id"]["S"]
    return incident.incident_id
