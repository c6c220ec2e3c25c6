"""INGEST: the function of an alarm that names none (an alarm on a queue, a composite alarm), found in the account.

An alarm on a queue names no function: the onboarded function whose event source mapping reads the
queue is found in the baseline table (each baseline lists its ``event_sources``), and the incident
says so in ``resolved_from``. Nor does a composite alarm: its child alarms that set it off (else those
its rule needs in ALARM) are read with DescribeAlarms, nested composites down to MAX_COMPOSITE_DEPTH,
and the one function they watch is the incident's, with the metric of the child that names it.

Reads only: the baseline table, DescribeAlarms.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from incident_responder.account.baseline import baseline_table_name
from incident_responder.account.names import function_name_of
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import Incident
from incident_responder.intake.alerts import Home, read_alert, rule_children
from incident_responder.intake.errors import MalformedAlertError, UnresolvedAlertError
from incident_responder.intake.pending import CompositeAlarm, QueueAlarm
from incident_responder.intake.shapes import AlarmNotification, AlarmTrigger

# A composite alarm's children are followed through at most this many levels of composites.
MAX_COMPOSITE_DEPTH = 3
# What DescribeAlarms answers when the role may not read alarms: a configuration to fix, not a retry.
ACCESS_DENIED = ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation")


def functions_reading(clients: AwsClients, source_arn: str, table: str | None = None) -> list[str]:
    """The onboarded functions whose baseline lists ``source_arn`` among the event sources that invoke them (as the
    table names them: a member's by ARN, :func:`incident_responder.core.members.function_key`).

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
    return pending.incident(function_name_of(functions[0]), via)


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
            if child.get("AlarmRule") is not None:  # a composite of its own, whose children are where it is
                place = Home.of(child.get("AlarmArn") or "") or home
                try:
                    frontier += rule_children(child["AlarmRule"], *(place[:2] if place else (None, None)))
                except MalformedAlertError as exc:
                    reasons.append(str(exc))
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
    clients: AwsClients,
    message: str | dict[str, Any],
    baseline_table: str | None = None,
    home: Home | None = None,
    clients_for: Callable[[str | None, str | None], AwsClients] | None = None,
) -> Incident:
    """:func:`~incident_responder.intake.alerts.parse_alert`, with an alarm on a queue or a composite alarm resolved to
    its function in the account (reads only): the alarm's own account and Region, through ``clients_for(account,
    region)`` when given (a member's), else ``clients``.

    Raises AlertIgnoredError (a change into OK or INSUFFICIENT_DATA) or MalformedAlertError (an
    :class:`UnresolvedAlertError` for a queue no single function reads, or a composite whose children do not
    name one function).
    """
    alert = read_alert(message, home=home)
    if isinstance(alert, QueueAlarm):
        there = Home.of(alert.queue_arn)
        where = clients_for(there.account, there.region) if clients_for and there else clients
        return resolve_queue_alarm(where, alert, baseline_table)
    if isinstance(alert, CompositeAlarm):
        there = Home.of(alert.alarm.AlarmArn or "")
        where = clients_for(there.account, there.region) if clients_for and there else clients
        return resolve_composite_alarm(where, alert, baseline_table, home)
    return alert
