"""Turn an alert (a CloudWatch alarm notification or the project's own alert JSON) into an Incident.

The incident id is derived from what identifies the alert (function, alarm, state-change time), so
a duplicate delivery of the same alert yields the same id; it is also a valid execution name.

Two kinds of alarm name no function: reading one gives a pending alarm that ingest resolves in the account.
An alarm on an SQS queue (namespace ``AWS/SQS``, dimension ``QueueName``) gives a :class:`QueueAlarm`: its
function is the onboarded one whose event source mapping reads the queue. A composite alarm gives a
:class:`CompositeAlarm`: its function is the one its child alarms in ALARM watch (read with DescribeAlarms).
Nothing here calls AWS.

Besides the SNS notification, the same alarm change is read in the shape EventBridge publishes and the shape an
alarm's Lambda action sends (:mod:`incident_responder.intake.alarm_events`). Whatever the shape, an alert that
holds no text (a lone surrogate) or names two accounts or Regions for its alarm is refused with the reason.

    >>> incident = parse_alert({"function_name": "data-processor", "error_type": "KeyError",
    ...                         "detected_at": "2026-11-23T04:00:00Z"})
    >>> incident.incident_id  # doctest: +ELLIPSIS
    'data-processor-20261123T040000-...'
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from pydantic import ValidationError

from incident_responder.core.contracts import QUALIFIER_RE, Incident
from incident_responder.core.members import Member
from incident_responder.intake.alarm_events import ACCOUNT_ID_RE, REGION_RE, consistent, notification_of_event
from incident_responder.intake.errors import (
    AlertIgnoredError,
    ForeignAlertError,
    FunctionNotNamedError,
    MalformedAlertError,
)
from incident_responder.intake.pending import (
    CompositeAlarm,
    QueueAlarm,
    alarm_incident,
    incident_id_for,
    without_secrets,
)
from incident_responder.intake.shapes import AlarmMetric, AlarmNotification, ProjectAlert

# A sender's clock may run a little ahead; an alert from further in the future means nothing.
CLOCK_SKEW = timedelta(minutes=5)
# Nor does one from before Lambda existed (fromisoformat reads "1111111111..." as the year 1111).
EARLIEST = datetime(2014, 11, 13, tzinfo=UTC)

# SQS queue names: 1-80 of A-Z a-z 0-9 - _, a FIFO queue's ending in .fifo.
QUEUE_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,75}(?:\.fifo)?|[A-Za-z0-9_-]{1,80}")

# ALARM("name or ARN") terms of a composite alarm's rule (the quotes are optional for plain names).
_ALARM_TERM = re.compile(r'(\bNOT\s+)?\bALARM\(\s*(?:"((?:[^"\\]|\\.)*)"|([^\s()"]+))\s*\)')
# Alarm names are 1-255 characters; a composite's rule names at most 100 alarms.
MAX_CHILD_ALARMS = 100
# Metrics an alarm divides by to make a rate: they count traffic, not a failure (see fault_signature).
RATE_DENOMINATORS = frozenset({"Invocations"})


def alarm_name_of(reference: str, account: str | None = None, region: str | None = None) -> str:
    """The alarm name in a rule's or notification's reference: a name, or an ARN ``...:alarm:NAME``.

    An ARN of another account or Region than the composite's own (``account``, ``region``, when known) is refused
    (ForeignAlertError): the alarm of the same name here is another alarm, and is never read in its place.
    """
    if not (reference.startswith("arn:") and ":alarm:" in reference):
        return reference
    there = Home.of(reference)
    if there and ((account and there.account != account) or (region and there.region != region)):
        raise ForeignAlertError(
            f"child alarm {reference[:300]!r} is in account {there.account}, Region {there.region}; the composite "
            f"alarm is in account {account or there.account}, Region {region or there.region}: the alarm of the same "
            "name here is another alarm, so it is not read; a responder watches its own account's alarms"
        )
    return reference.split(":alarm:", 1)[1]


def rule_children(rule: str, account: str | None = None, region: str | None = None) -> list[str]:
    """The alarms a composite rule needs in ALARM, in order: ``ALARM(a) OR (ALARM("b c") AND OK(d))`` -> a, b c.
    An ARN of another account or Region than ``account`` and ``region`` is refused, as :func:`alarm_name_of` says.

    >>> rule_children('ALARM(orders-errors) OR ALARM("arn:aws:cloudwatch:us-east-1:1:alarm:orders throttles") '
    ...               'AND NOT ALARM(maintenance)')
    ['orders-errors', 'orders throttles']
    """
    terms = _ALARM_TERM.findall(rule)
    names = [alarm_name_of(quoted or plain, account, region) for negated, quoted, plain in terms if not negated]
    return list(dict.fromkeys(name for name in names if name))[:MAX_CHILD_ALARMS]


_QUALIFIER = re.compile(QUALIFIER_RE)


class Home(NamedTuple):
    """The account and Region a responder stack watches (from any ARN of the stack's own), and the member accounts
    and Regions it also answers for (:func:`incident_responder.core.members.members_of`)."""

    account: str
    region: str
    members: Collection[Member] = frozenset()

    @classmethod
    def of(cls, arn: str, members: Collection[Member] = frozenset()) -> Home | None:
        parts = arn.split(":")
        return cls(parts[4], parts[3], members) if len(parts) > 5 and parts[0] == "arn" else None

    def answers_for(self, account: str | None, region: str | None) -> bool:
        account, region = account or self.account, region or self.region
        return (account, region) == (self.account, self.region) or Member(account, region) in self.members


def _queue_of(metric: AlarmMetric) -> str | None:
    if metric.Namespace != "AWS/SQS":
        return None
    return next((dim.value for dim in metric.Dimensions if dim.name == "QueueName"), None)


def _function_of(alarm_name: str, metric: AlarmMetric) -> tuple[str, str | None] | None:
    """(function, qualifier) a metric is about: FunctionName, with the alias or version that Lambda's
    ``Resource`` (``function:qualifier``) or ``ExecutedVersion`` dimension names; or a /aws/lambda/ log group."""
    dims = {dim.name: dim.value for dim in metric.Dimensions}
    if "FunctionName" in dims:
        function, _, qualifier = dims["FunctionName"].partition(":")
        resource = dims.get("Resource", "")
        if resource.startswith(f"{function}:"):
            qualifier = resource.removeprefix(f"{function}:")
        qualifier = qualifier or dims.get("ExecutedVersion", "")
        if qualifier and not _QUALIFIER.fullmatch(qualifier):
            raise MalformedAlertError(
                f"alarm {alarm_name!r}: {qualifier[:100]!r} is not a Lambda alias or version of {function[:64]!r}"
            )
        return function, qualifier or None
    group = dims.get("LogGroupName", "")
    return (group.removeprefix("/aws/lambda/"), None) if group.startswith("/aws/lambda/") else None


def _check_home(what: str, account: str | None, region: str | None, home: Home | None) -> None:
    """An alert of another account or Region names a function this stack cannot see, whatever its name."""
    if home is None or home.answers_for(account, region):
        return
    members = f" and the members {', '.join(map(str, sorted(home.members)))}" if home.members else ""
    raise ForeignAlertError(
        f"{what} is from account {account or home.account}, Region {region or home.region}; this responder "
        f"watches account {home.account} in {home.region}{members}, where a function of the same name is another "
        "function: list that account and Region as a member (MemberAccounts, MemberRegions), or send this "
        "responder only the alarms it answers for"
    )


# What JSON's escapes can spell but no Unicode text holds: a surrogate code point on its own ("\ud800").
_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_text(message: dict[str, Any]) -> None:
    """Every key and string of the alert is Unicode text: a lone surrogate is refused here, where it is a reason,
    rather than where it fails to encode (the incident id's hash, DescribeAlarms, DynamoDB)."""
    pending: list[tuple[str, Any]] = [("", message)]
    while pending:  # iterative: however deep JSON let the alert nest
        path, value = pending.pop()
        if isinstance(value, str) and _SURROGATE.search(value):
            where = f"in {path[:200]}" if path else "in the alert"
        elif isinstance(value, dict) and any(_SURROGATE.search(str(key)) for key in value):
            where = f"in a key of {path[:200]}" if path else "in a key"
        else:
            items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
            # Reversed onto the stack: the first one in the alert is the one named.
            pending += reversed([(f"{path}.{key}" if path else str(key), item) for key, item in items])
            continue
        raise MalformedAlertError(
            f"alert holds a lone surrogate (U+D800-U+DFFF, which JSON can escape but no text contains) {where}"
        )


def parse_alert(message: str | dict[str, Any], now: datetime | None = None, home: Home | None = None) -> Incident:
    """An Incident from an SNS message body (string or already-decoded JSON).

    Whatever the input, this returns an Incident or raises MalformedAlertError with the reason: deep
    nesting and integers too long to convert are reasons too, never a crash. An alarm on a queue and a composite
    alarm raise :class:`FunctionNotNamedError` (its ``pending`` says what to resolve): see :func:`read_alert`.
    A change into OK or INSUFFICIENT_DATA raises :class:`AlertIgnoredError`.
    """
    alert = read_alert(message, now, home)
    if isinstance(alert, QueueAlarm | CompositeAlarm):
        raise FunctionNotNamedError(alert)
    return alert


def read_alert(
    message: str | dict[str, Any], now: datetime | None = None, home: Home | None = None
) -> Incident | QueueAlarm | CompositeAlarm:
    """An Incident, or a :class:`QueueAlarm` (an alarm that watches a queue) or :class:`CompositeAlarm`, which name
    no function: ingest resolves them in the account.

    Raises AlertIgnoredError for an alarm's change into a state other than ALARM (checked before anything
    else the alarm says), ForeignAlertError for an alert of another account or Region than ``home``'s, and
    MalformedAlertError with the reason for anything else, as :func:`parse_alert` does.
    """
    if isinstance(message, str):
        try:
            message = json.loads(message)
        except json.JSONDecodeError as exc:
            raise MalformedAlertError(f"alert is not JSON: {exc.msg} at position {exc.pos}") from exc
        except RecursionError:
            raise MalformedAlertError("alert is nested too deeply to be an alert") from None
        except ValueError as exc:  # e.g. an integer longer than Python converts (4300 digits)
            raise MalformedAlertError(f"alert is not usable JSON: {str(exc)[:200]}") from None
    if not isinstance(message, dict):
        raise MalformedAlertError("alert must be a JSON object")
    alert: Incident | QueueAlarm | CompositeAlarm
    try:
        _check_text(message)
        if "alarmData" in message or "detail" in message:
            message = notification_of_event(message)
        if "AlarmName" in message:
            alert = _from_alarm(AlarmNotification.model_validate(message), home)
        else:
            project = ProjectAlert.model_validate(message)
            _check_home(f"alert for {project.function_name!r}", project.account_id, project.region, home)
            alert = _from_project_alert(project)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'alert'}: {e['msg']}" for e in exc.errors(include_input=False)[:5]
        )
        raise MalformedAlertError(f"alert is not a CloudWatch alarm or a project alert: {problems[:800]}") from None
    except RecursionError:
        raise MalformedAlertError("alert is nested too deeply to be an alert") from None
    detected = alert.detected_at if isinstance(alert, Incident) else alert.alarm.StateChangeTime
    _check_time(detected, now or datetime.now(UTC))
    return alert


def _check_time(value: str, now: datetime) -> None:
    """``detected_at`` must be a real ISO 8601 date and time (UTC when no offset is given), not in the future."""
    try:
        if len(value) <= 10:
            raise ValueError("a date without a time")
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise MalformedAlertError(f"detected_at {value[:40]!r} is not an ISO 8601 date and time") from None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    if moment < EARLIEST:
        raise MalformedAlertError(f"detected_at {value[:40]!r} is before AWS Lambda existed")
    if moment > now + CLOCK_SKEW:
        raise MalformedAlertError(f"detected_at {value[:40]!r} is in the future (now {now:%Y-%m-%dT%H:%M:%SZ})")


def fault_signature(incident: Incident) -> str:
    """What failed on the function, not which alarm said so: what makes two alerts about one function one fault.

    Alerts with the same function and signature within the grouping window are one incident. An alarm's is the
    metrics it watches (a composite's, its child's; a queue alarm's, the queue's), so a composite and its child, or
    an error-rate and an error-count alarm, give one incident and one approval request. A rate's denominator
    (Invocations) is traffic, not what failed: left out when the alarm reads other metrics. Other metrics stay other
    faults (Throttles beside Errors, Duration): the investigation starts from the incident's metric, so absorbing
    one into the other would leave its symptom undiagnosed. An alias or version is another target of the fix, so
    another fault too. A project alert's is its error type.
    """
    where = f"@{incident.qualifier}" if incident.qualifier else ""
    names = sorted(set(filter(None, (incident.metric_name or "").split(", "))))
    if incident.alarm_name and names:
        failed = [name for name in names if name not in RATE_DENOMINATORS] or names
        return f"metric:{incident.namespace or ''}:{','.join(failed)}{where}"
    if incident.alarm_name:  # no metric named (metric math over expressions alone): the alarm is all there is
        return f"alarm:{incident.alarm_name}{where}"
    return f"error:{incident.error_type or ''}{where}"


def _from_alarm(alarm: AlarmNotification, home: Home | None = None) -> Incident | QueueAlarm | CompositeAlarm:
    name = alarm.AlarmName
    if alarm.NewStateValue != "ALARM":
        since = f" from {alarm.OldStateValue}" if alarm.OldStateValue else ""
        raise AlertIgnoredError(
            f"alarm {name!r} changed to {alarm.NewStateValue[:40]}{since[:50]}: only a change into ALARM opens an incident"
        )
    arn = (alarm.AlarmArn or "").split(":")
    in_arn, region = (arn[4], arn[3]) if len(arn) > 5 else (None, None)
    consistent(f"alarm {name!r}", "account", {"AWSAccountId": alarm.AWSAccountId, "AlarmArn": in_arn})
    account = alarm.AWSAccountId or in_arn
    _check_home(f"alarm {name!r}", account, region, home)
    if alarm.Trigger is None:
        if alarm.AlarmRule is not None:
            # Its children are where it is: this account and Region (the home's when the alarm does not say).
            return _composite(alarm, account or (home and home.account), region or (home and home.region))
        raise MalformedAlertError(
            f"alarm {name!r} has neither a Trigger (a metric alarm) nor an AlarmRule (a composite)"
        )
    metrics = alarm.Trigger.metrics()
    found = {f for f in (_function_of(name, m) for m in metrics) if f}
    functions = sorted({function for function, _ in found})
    if len(functions) > 1:
        raise MalformedAlertError(
            f"alarm {name!r} reads the metrics of several functions ({', '.join(functions)[:300]}): an incident is "
            "about one function, so none is chosen; alarm on each function's own metrics"
        )
    if functions:
        qualifiers = {qualifier for _, qualifier in found if qualifier}
        return alarm_incident(alarm, functions[0], qualifier=qualifiers.pop() if len(qualifiers) == 1 else None)
    queue = next((q for q in map(_queue_of, metrics) if q), None)
    if queue is None:
        raise MalformedAlertError(
            f"alarm {name!r} has no FunctionName or /aws/lambda/ log group dimension in the metrics it reads, "
            "nor the QueueName of an AWS/SQS metric"
        )
    if not QUEUE_NAME_RE.fullmatch(queue or ""):
        raise MalformedAlertError(f"alarm {alarm.AlarmName!r}: QueueName {queue[:100]!r} is not an SQS queue name")
    # arn:PARTITION:cloudwatch:REGION:ACCOUNT:alarm:NAME; the queue is in the alarm's region and account.
    account = alarm.AWSAccountId or (arn[4] if len(arn) > 5 else "")
    region = arn[3] if len(arn) > 5 and arn[0] == "arn" and re.fullmatch(r"aws[a-z-]*", arn[1]) else ""
    if not REGION_RE.fullmatch(region) or not ACCOUNT_ID_RE.fullmatch(account):
        raise MalformedAlertError(
            f"alarm {alarm.AlarmName!r} on queue {queue} has no region (AlarmArn) and account (AWSAccountId) "
            "to name the queue by its ARN"
        )
    return QueueAlarm(alarm=alarm, queue_name=queue, queue_arn=f"arn:{arn[1]}:sqs:{region}:{account}:{queue}")


def _composite(alarm: AlarmNotification, account: str | None, region: str | None) -> CompositeAlarm:
    """The children that set the composite off (TriggeringChildren), else every ALARM() term of its rule; a child
    named by the ARN of another account or Region than the composite's is refused."""
    triggered = []
    for child in alarm.TriggeringChildren[:MAX_CHILD_ALARMS]:
        state = child.get("State") if isinstance(child, dict) else None
        reference = child.get("Arn") if isinstance(child, dict) else child
        if isinstance(reference, str) and (not isinstance(state, dict) or state.get("Value") in (None, "ALARM")):
            triggered.append(alarm_name_of(reference, account, region))
    children = list(dict.fromkeys(filter(None, triggered))) or rule_children(alarm.AlarmRule or "", account, region)
    if not children:
        raise MalformedAlertError(
            f"alarm {alarm.AlarmName!r} is a composite alarm whose rule ({(alarm.AlarmRule or '')[:200]}) names no "
            "alarm in ALARM: nothing says which function is failing"
        )
    return CompositeAlarm(alarm=alarm, children=children, triggered=bool(triggered))


def _from_project_alert(alert: ProjectAlert) -> Incident:
    detected = alert.detected_at
    return without_secrets(
        Incident(
            incident_id=incident_id_for(alert.function_name, detected, alert.alert_id or alert.error_type or ""),
            function_name=alert.function_name,
            source="alert",
            detected_at=detected,
            error_type=alert.error_type,
            error_message=alert.error_message,
            region=alert.region,
            account_id=alert.account_id,
        )
    )
