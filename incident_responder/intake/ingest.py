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
    Another alert for the same function and fault signature within the grouping window, whichever
    alarm sent it (a composite and its child: :func:`~incident_responder.intake.alerts.fault_signature`):
    it is recorded on the group of the incident already under way, and starts nothing. Only while that
    incident is open: once it has ended (:data:`RECURRENCE_STARTS_AFTER`: remediated, rolled back,
    rejected, failed...), the fault firing again is a recurrence and starts a new incident
    (``started``, with ``recurrence_of``), which takes the group over.

An alarm on a queue or a composite alarm names no function: :mod:`incident_responder.intake.resolve` finds
it in the account, and the incident says how in ``resolved_from``.

:func:`decide` is the part of this that writes nothing and starts nothing: ``responder check-alert``
runs it on a user's own notifications.

The group item (``group#<function>#<signature digest>``,
:func:`incident_responder.state.keys.group`, in the incident-state table) is claimed with
a conditional write, so of any number of concurrent copies exactly one starts the execution; the
incident it stores lets a retry finish a start that was interrupted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel

from incident_responder.account.baseline import onboarded_arn
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import Incident
from incident_responder.core.members import (
    LazyMembers,
    MemberAccessError,
    NotAMemberError,
    function_key_of,
    incident_clients,
    member_access,
)
from incident_responder.intake.alerts import Home, fault_signature
from incident_responder.intake.errors import AlertIgnoredError, MalformedAlertError
from incident_responder.intake.resolve import incident_from_alert
from incident_responder.state import keys
from incident_responder.state.lifecycle import TERMINAL_STATUSES, start_incident

# After these an incident is over: the alarm firing again is a recurrence and starts a new incident. Not after
# PROPOSAL_READY (a proposal awaits a person) nor SUPPRESSED (the budget said no, and says so again).
RECURRENCE_STARTS_AFTER = TERMINAL_STATUSES - {"PROPOSAL_READY", "SUPPRESSED"}
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
    recurrence_of: str | None = None  # started: the ended incident whose group this alert would have joined


def decide(
    clients: AwsClients,
    message: str | dict[str, Any],
    baseline_table: str,
    home: Home | None,
    clients_for: Callable[[str | None, str | None], AwsClients] | None = None,
) -> tuple[Incident | None, IngestOutcome | None]:
    """Whether an alert may start an incident, reading the account but writing nothing: (the incident, None) when
    it may, (None, the ``ignored`` or ``rejected`` outcome) when not. ``clients_for(account, region)``: the clients
    of a member account's alarm (:func:`incident_responder.core.members.incident_clients`)."""
    try:
        incident = incident_from_alert(clients, message, baseline_table, home, clients_for)
        where = clients_for(incident.account_id, incident.region) if clients_for else clients
    except AlertIgnoredError as exc:
        return None, IngestOutcome(outcome="ignored", reason=str(exc))
    except (MalformedAlertError, NotAMemberError, MemberAccessError) as exc:
        return None, IngestOutcome(outcome="rejected", reason=str(exc))
    # (One found through an event source mapping was found in the baseline table; asked again all the same.)
    if onboarded_arn(where, incident.function_name, baseline_table) is None:
        return None, IngestOutcome(
            outcome="rejected",
            alert_incident_id=incident.incident_id,
            reason=f"function {incident.function_name!r} is not onboarded (no recorded baseline): "
            f"run `responder onboard {incident.function_name}` first",
        )
    return incident, None


def admission(
    clients: AwsClients, state_machine_arn: str
) -> tuple[Home | None, Callable[[str | None, str | None], AwsClients]]:
    """What :func:`decide` needs to admit an alert: the stack's own account and Region (its state machine's) with
    the member accounts and Regions it answers for (read only for an alert from elsewhere), and the clients of an
    alert's account and Region (a member's read role)."""
    home = Home.of(state_machine_arn, LazyMembers(lambda: member_access(clients).members))

    def clients_for(account: str | None, region: str | None) -> AwsClients:
        return incident_clients(account, region, "read", clients)

    return home, clients_for


def group_key(incident: Incident) -> str:
    """The fault's group: a member's function by its ARN (a function of the same name elsewhere is another one)."""
    return keys.group(
        function_key_of(incident.account_id, incident.region, incident.function_name), fault_signature(incident)
    )


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
    home, clients_for = admission(clients, state_machine_arn)
    incident, refused = decide(clients, message, baseline_table, home, clients_for)
    if incident is None:
        assert refused is not None
        return refused
    now = time.time() if now is None else now
    ddb = clients.get("dynamodb")
    key = group_key(incident)
    try:
        # A new group when there is none for this fault, or the last one's window has closed.
        _claim_group(
            ddb,
            state_table,
            key,
            incident,
            now,
            window_seconds,
            "attribute_not_exists(incident_id) OR window_ends_at < :now",
        )
    except ddb.exceptions.ConditionalCheckFailedException:
        return _join_group(clients, state_table, key, incident, state_machine_arn, now, window_seconds)
    return _start(clients, state_table, key, incident, state_machine_arn, "started")


def _claim_group(
    ddb: Any,
    state_table: str,
    key: str,
    incident: Incident,
    now: float,
    window_seconds: int,
    condition: str,
    values: dict[str, Any] | None = None,
    recurrence_of: str | None = None,
) -> None:
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
            **({"recurrence_of": {"S": recurrence_of}} if recurrence_of else {}),
        },
        ConditionExpression=condition,
        ExpressionAttributeValues={":now": {"N": str(int(now))}, **(values or {})},
    )


def _ended(clients: AwsClients, state_table: str, incident_id: str) -> bool:
    """Has the incident ended (its record says so)? One small consistent read."""
    item = (
        clients.get("dynamodb")
        .get_item(
            TableName=state_table,
            Key={"incident_id": {"S": incident_id}},
            ProjectionExpression="#s",
            ExpressionAttributeNames={"#s": "status"},
            ConsistentRead=True,
        )
        .get("Item")
    )
    return bool(item) and item.get("status", {}).get("S") in RECURRENCE_STARTS_AFTER


def _start(
    clients: AwsClients,
    state_table: str,
    key: str,
    incident: Incident,
    state_machine_arn: str,
    outcome: Literal["started", "duplicate", "attached"],
) -> IngestOutcome:
    result = start_incident(clients, state_machine_arn, incident)
    clients.get("dynamodb").update_item(
        TableName=state_table,
        Key={"incident_id": {"S": key}},
        UpdateExpression="SET execution_arn = :arn",
        ExpressionAttributeValues={":arn": {"S": result.execution_arn or ""}},
    )
    return IngestOutcome(
        outcome="duplicate" if result.duplicate else outcome,
        incident_id=incident.incident_id,
        alert_incident_id=incident.incident_id,
        execution_arn=result.execution_arn,
        alerts_in_group=1,
        resolved_from=incident.resolved_from,
    )


def _join_group(
    clients: AwsClients,
    state_table: str,
    key: str,
    incident: Incident,
    state_machine_arn: str,
    now: float,
    window_seconds: int,
) -> IngestOutcome:
    ddb = clients.get("dynamodb")
    group = ddb.get_item(TableName=state_table, Key={"incident_id": {"S": key}}, ConsistentRead=True)["Item"]
    owner = Incident.model_validate_json(group["incident_json"]["S"])
    if owner.incident_id != incident.incident_id and _ended(clients, state_table, owner.incident_id):
        # A recurrence: the fault is back after its incident ended. Of concurrent copies, the one that takes the
        # group over from the ended incident starts the new one; the others join it.
        try:
            _claim_group(
                ddb,
                state_table,
                key,
                incident,
                now,
                window_seconds,
                "group_incident_id = :owner",
                {":owner": {"S": owner.incident_id}},
                recurrence_of=owner.incident_id,
            )
        except ddb.exceptions.ConditionalCheckFailedException:
            return _join_group(clients, state_table, key, incident, state_machine_arn, now, window_seconds)
        started = _start(clients, state_table, key, incident, state_machine_arn, "started")
        return started.model_copy(update={"recurrence_of": owner.incident_id})
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


class AlertCheck(BaseModel):
    """What ingest would do with an alert (``responder check-alert``): ``start``, ``ignore`` or ``reject``."""

    outcome: Literal["start", "ignore", "reject"]
    function: str | None = None
    qualifier: str | None = None
    reason: str


def check_alert(
    clients: AwsClients, message: str | dict[str, Any], baseline_table: str, home: Home | None
) -> AlertCheck:
    """Ingest's decision on an alert, with its reason; reads the account (alarms, baselines) and changes nothing."""
    incident, refused = decide(clients, message, baseline_table, home)
    if incident is None:
        assert refused is not None
        return AlertCheck(outcome="ignore" if refused.outcome == "ignored" else "reject", reason=refused.reason or "")
    watched = f" on {incident.metric_name}" if incident.metric_name else ""
    alias = f" (alias or version {incident.qualifier})" if incident.qualifier else ""
    source = f"alarm {incident.alarm_name!r}{watched}" if incident.alarm_name else "the alert"
    via = f", found through the {incident.resolved_from}" if incident.resolved_from else ""
    return AlertCheck(
        outcome="start",
        function=incident.function_name,
        qualifier=incident.qualifier,
        reason=f"{source} starts an incident for onboarded function {incident.function_name}{alias}{via}",
    )
