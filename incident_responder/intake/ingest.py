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
    recorded on the group of the incident already under way, and starts nothing. Only while that
    incident is open: once it has ended (:data:`RECURRENCE_STARTS_AFTER`: remediated, rolled back,
    rejected, failed...), the same alarm firing again is a recurrence and starts a new incident
    (``started``, with ``recurrence_of``), which takes the group over.

An alarm on a queue names no function: the onboarded function whose event source mapping reads the
queue is found in the baseline table (each baseline lists its ``event_sources``), and the incident
says so in ``resolved_from``. Nor does a composite alarm: its child alarms that set it off (else those
its rule needs in ALARM) are read with DescribeAlarms, nested composites down to MAX_COMPOSITE_DEPTH,
and the one function they watch is the incident's, with the metric of the child that names it.

:func:`decide` is the part of this that writes nothing and starts nothing: ``responder check-alert``
runs it on a user's own notifications.

The group item (``group#<function>#<signature digest>`` in the incident-state table) is claimed with
a conditional write, so of any number of concurrent copies exactly one starts the execution; the
incident it stores lets a retry finish a start that was interrupted.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Literal

from botocore.exceptions import ClientError
from pydantic import BaseModel

from incident_responder.account.baseline import baseline_table_name, onboarded_arn
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import Incident
from incident_responder.intake.alerts import (
    AlarmNotification,
    AlarmTrigger,
    AlertIgnoredError,
    CompositeAlarm,
    Home,
    MalformedAlertError,
    QueueAlarm,
    fault_signature,
    read_alert,
    rule_children,
)
from incident_responder.state.lifecycle import TERMINAL_STATUSES, start_incident

# After these an incident is over: the alarm firing again is a recurrence and starts a new incident. Not after
# PROPOSAL_READY (a proposal awaits a person) nor SUPPRESSED (the budget said no, and says so again).
RECURRENCE_STARTS_AFTER = TERMINAL_STATUSES - {"PROPOSAL_READY", "SUPPRESSED"}
# Alerts attached to a group are listed up to this many (the item stays far below 400 KB); beyond, counted.
MAX_LISTED_ALERTS = 500
# A composite alarm's children are followed through at most this many levels of composites.
MAX_COMPOSITE_DEPTH = 3
# What DescribeAlarms answers when the role may not read alarms: a configuration to fix, not a retry.
ACCESS_DENIED = ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation")


class IngestOutcome(BaseModel):
    outcome: Literal["started", "duplicate", "attached", "ignored", "rejected"]
    incident_id: str | None = None
    alert_incident_id: str | None = None
    execution_arn: str | None = None
    reason: str | None = None
    alerts_in_group: int | None = None
    resolved_from: str | None = None
    recurrence_of: str | None = None  # started: the ended incident whose group this alert would have joined


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
        # The queues that invoke it, and the dead-letter queues those send what failed in them to.
        "FilterExpression": "contains(event_sources, :source) OR contains(dead_letter_queues, :source)",
        "ProjectionExpression": "function_name, event_sources, dead_letter_queues",
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
    via = _via(clients, functions[0], pending.queue_arn, pending.queue_name, baseline_table)
    return pending.incident(functions[0], via)


def _via(clients: AwsClients, function: str, queue_arn: str, queue_name: str, table: str | None) -> str:
    """How the queue leads to the function: it reads it, or it is the dead-letter queue of a queue it reads."""
    item = (
        clients.get("dynamodb")
        .get_item(
            TableName=table or baseline_table_name(),
            Key={"function_name": {"S": function}},
            ProjectionExpression="function_name, event_sources, dead_letter_queues",
            ConsistentRead=True,
        )
        .get("Item", {})
    )
    if queue_arn in item.get("event_sources", {}).get("SS", []):
        return f"queue {queue_name} via its event source mapping"
    return f"dead-letter queue {queue_name} of the queue its event source mapping reads"


def describe_alarms(clients: AwsClients, names: list[str]) -> list[dict[str, Any]]:
    """The metric and composite alarms of these names (DescribeAlarms returns only metric alarms unless asked)."""
    found: list[dict[str, Any]] = []
    paginator = clients.get("cloudwatch").get_paginator("describe_alarms")
    for start in range(0, len(names), 100):  # AlarmNames takes at most 100
        pages = paginator.paginate(AlarmNames=names[start : start + 100], AlarmTypes=["MetricAlarm", "CompositeAlarm"])
        for page in pages:
            found += page.get("MetricAlarms", []) + page.get("CompositeAlarms", [])
    return found


def resolve_composite_alarm(
    clients: AwsClients, pending: CompositeAlarm, baseline_table: str | None = None, home: Home | None = None
) -> Incident:
    """The incident of a composite alarm: the one function its child alarms in ALARM watch.

    Children are read with DescribeAlarms; a child that is itself a composite is followed through its own
    rule. When the notification did not list the children that set it off, the rule's ALARM() terms are
    narrowed to those in ALARM now (all of them when none is). Each child is read as a metric alarm of its
    own (function, alias or version, queue), so one on a queue resolves through its consumer.
    """
    alarm = pending.alarm
    what = f"composite alarm {alarm.AlarmName!r}"
    functions: dict[str, list[tuple[str, str | None, AlarmTrigger]]] = {}
    reasons: list[str] = []
    frontier, seen, narrow = pending.children, set(), not pending.triggered
    for _ in range(MAX_COMPOSITE_DEPTH):
        frontier = [name for name in frontier if name not in seen]
        if not frontier:
            break
        seen.update(frontier)
        try:
            children = describe_alarms(clients, frontier)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ACCESS_DENIED:
                raise  # throttled or unavailable: the invocation is retried
            raise UnresolvedAlertError(
                f"{what}: its child alarms cannot be read (cloudwatch:DescribeAlarms denied to ingest's role): "
                "grant it, or send the child alarms that watch the function to the incident topic"
            ) from None
        missing = sorted(set(frontier) - {c.get("AlarmName") for c in children})
        reasons += [f"child alarm {name!r} does not exist" for name in missing[:5]]
        if narrow and any(c.get("StateValue") == "ALARM" for c in children):
            children = [c for c in children if c.get("StateValue") == "ALARM"]
        frontier = []
        for child in children:
            if child.get("AlarmRule") is not None:  # a composite of its own
                frontier += rule_children(child["AlarmRule"])
                continue
            try:
                function, qualifier, trigger = _child_function(clients, alarm, child, baseline_table, home)
            except MalformedAlertError as exc:
                reasons.append(str(exc))
                continue
            functions.setdefault(function, []).append((child["AlarmName"], qualifier, trigger))
    if len(functions) > 1:
        named = "; ".join(f"{f} ({', '.join(c for c, _, _ in via)})" for f, via in sorted(functions.items()))
        raise UnresolvedAlertError(
            f"{what} is set off by child alarms on several functions ({named[:400]}): an incident is about one "
            "function, so none is chosen; send each function's own alarms to the incident topic"
        )
    if not functions:
        why = "; ".join(reasons)[:600] or "none of them watches a function"
        raise UnresolvedAlertError(
            f"{what}: no child alarm in ALARM names a function ({', '.join(pending.children)[:300]}): {why}"
        )
    ((function, via),) = functions.items()
    qualifiers = {qualifier for _, qualifier, _ in via if qualifier}
    return pending.incident(
        function,
        resolved_from=f"child alarm {', '.join(dict.fromkeys(c for c, _, _ in via))[:300]} of the composite alarm",
        qualifier=qualifiers.pop() if len(qualifiers) == 1 else None,
        trigger=via[0][2],
    )


def _child_function(
    clients: AwsClients,
    parent: AlarmNotification,
    child: dict[str, Any],
    baseline_table: str | None,
    home: Home | None,
) -> tuple[str, str | None, AlarmTrigger]:
    """(function, qualifier, what it watches) of a metric alarm as DescribeAlarms returns it: read as if it had
    notified in the parent's ALARM (its dimensions, metric math, queue), so every rule for a metric alarm holds."""
    trigger = AlarmTrigger.model_validate(
        {k: child[k] for k in ("MetricName", "Namespace", "Dimensions", "Metrics") if child.get(k) is not None}
    )
    as_notified = parent.model_copy(
        update={
            "AlarmName": child.get("AlarmName", ""),
            "AlarmArn": child.get("AlarmArn"),
            "Trigger": trigger,
            "AlarmRule": None,
            "TriggeringChildren": [],
        }
    )
    alert = read_alert(as_notified.model_dump(mode="json", exclude_none=True), home=home)
    if isinstance(alert, QueueAlarm):
        alert = resolve_queue_alarm(clients, alert, baseline_table)
    if not isinstance(alert, Incident):  # read_alert gives a composite only for an AlarmRule, never set here
        raise MalformedAlertError(f"child alarm {child.get('AlarmName')!r} names no function")
    return alert.function_name, alert.qualifier, trigger


def incident_from_alert(
    clients: AwsClients, message: str | dict[str, Any], baseline_table: str | None = None, home: Home | None = None
) -> Incident:
    """:func:`~incident_responder.intake.alerts.parse_alert`, with an alarm on a queue or a composite alarm resolved to
    its function in the account (reads only).

    Raises AlertIgnoredError (a change into OK or INSUFFICIENT_DATA) or MalformedAlertError (an
    :class:`UnresolvedAlertError` for a queue no single function reads, or a composite whose children do not
    name one function).
    """
    alert = read_alert(message, home=home)
    if isinstance(alert, QueueAlarm):
        return resolve_queue_alarm(clients, alert, baseline_table)
    if isinstance(alert, CompositeAlarm):
        return resolve_composite_alarm(clients, alert, baseline_table, home)
    return alert


def decide(
    clients: AwsClients, message: str | dict[str, Any], baseline_table: str, home: Home | None
) -> tuple[Incident | None, IngestOutcome | None]:
    """Whether an alert may start an incident, reading the account but writing nothing: (the incident, None) when
    it may, (None, the ``ignored`` or ``rejected`` outcome) when not."""
    try:
        incident = incident_from_alert(clients, message, baseline_table, home)
    except AlertIgnoredError as exc:
        return None, IngestOutcome(outcome="ignored", reason=str(exc))
    except MalformedAlertError as exc:
        return None, IngestOutcome(outcome="rejected", reason=str(exc))
    # (One found through an event source mapping was found in the baseline table; asked again all the same.)
    if onboarded_arn(clients, incident.function_name, baseline_table) is None:
        return None, IngestOutcome(
            outcome="rejected",
            alert_incident_id=incident.incident_id,
            reason=f"function {incident.function_name!r} is not onboarded (no recorded baseline): "
            f"run `responder onboard {incident.function_name}` first",
        )
    return incident, None


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
    # The stack's account and Region are its state machine's: an alarm from elsewhere is not ours.
    incident, refused = decide(clients, message, baseline_table, Home.of(state_machine_arn))
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
