"""Turn an alert (a CloudWatch alarm notification or the project's own alert JSON) into an Incident.

The incident id is derived from what identifies the alert (function, alarm, state-change time), so
a duplicate delivery of the same alert yields the same id; it is also a valid execution name.

    >>> incident = parse_alert({"function_name": "data-processor", "error_type": "KeyError",
    ...                         "detected_at": "2026-11-23T04:00:00Z"})
    >>> incident.incident_id
    'data-processor-20261123T040000-...'  # doctest: +ELLIPSIS
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from incident_responder.contracts import Incident


class MalformedAlertError(ValueError):
    """The alert cannot be turned into an incident; the message says what is wrong."""


# A sender's clock may run a little ahead; an alert from further in the future means nothing.
CLOCK_SKEW = timedelta(minutes=5)
# Nor does one from before Lambda existed (fromisoformat reads "1111111111..." as the year 1111).
EARLIEST = datetime(2014, 11, 13, tzinfo=UTC)


class AlarmDimension(BaseModel):
    name: str
    value: str


class AlarmTrigger(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    MetricName: str | None = None
    Namespace: str | None = None
    Dimensions: list[AlarmDimension] = Field(default_factory=list)


class AlarmNotification(BaseModel):
    """The body CloudWatch publishes to SNS when an alarm changes state."""

    model_config = ConfigDict(extra="allow")
    AlarmName: str
    NewStateValue: str
    NewStateReason: str | None = None
    StateChangeTime: str
    AlarmArn: str | None = None
    AWSAccountId: str | None = None
    Trigger: AlarmTrigger


class ProjectAlert(BaseModel):
    """The project's own alert JSON, for sources that are not CloudWatch alarms."""

    model_config = ConfigDict(extra="forbid")
    function_name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    # Required: together with alert_id it identifies the alert, so duplicates map to one incident.
    detected_at: str = Field(min_length=10, max_length=40, description="ISO 8601")
    alert_id: str | None = Field(default=None, max_length=200)
    error_type: str | None = Field(default=None, max_length=200)
    error_message: str | None = Field(default=None, max_length=2000)
    region: str | None = None
    account_id: str | None = None


def incident_id_for(function_name: str, detected_at: str, discriminator: str) -> str:
    """``<function>-<yyyymmddTHHMMSS>-<hash>``: at most 80 chars of [A-Za-z0-9_-]."""
    stamp = re.sub(r"[^0-9T]", "", detected_at.split(".")[0].split("+")[0].rstrip("Z"))[:15]
    digest = hashlib.sha256(f"{function_name}|{detected_at}|{discriminator}".encode()).hexdigest()[:10]
    return f"{function_name[:50]}-{stamp}-{digest}"


def _function_from_dimensions(trigger: AlarmTrigger) -> str | None:
    for dim in trigger.Dimensions:
        if dim.name == "FunctionName":
            return dim.value.split(":")[0]
        if dim.name == "LogGroupName" and dim.value.startswith("/aws/lambda/"):
            return dim.value.removeprefix("/aws/lambda/")
    return None


def parse_alert(message: str | dict[str, Any], now: datetime | None = None) -> Incident:
    """An Incident from an SNS message body (string or already-decoded JSON).

    Whatever the input, this returns an Incident or raises MalformedAlertError with the reason: deep
    nesting and integers too long to convert are reasons too, never a crash.
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
    try:
        if "AlarmName" in message:
            incident = _from_alarm(AlarmNotification.model_validate(message))
        else:
            incident = _from_project_alert(ProjectAlert.model_validate(message))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'alert'}: {e['msg']}" for e in exc.errors(include_input=False)[:5]
        )
        raise MalformedAlertError(f"alert is not a CloudWatch alarm or a project alert: {problems[:800]}") from None
    except RecursionError:
        raise MalformedAlertError("alert is nested too deeply to be an alert") from None
    _check_time(incident.detected_at, now or datetime.now(UTC))
    return incident


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
    """What makes two alerts about one function the same fault: the alarm, else the error type.

    Alerts with the same function and signature within the grouping window are one incident.
    """
    if incident.alarm_name:
        return f"alarm:{incident.alarm_name}"
    return f"error:{incident.error_type or ''}"


def _from_alarm(alarm: AlarmNotification) -> Incident:
    function = _function_from_dimensions(alarm.Trigger)
    if not function:
        raise MalformedAlertError(f"alarm {alarm.AlarmName!r} has no FunctionName or /aws/lambda/ log group dimension")
    if alarm.NewStateValue != "ALARM":
        raise MalformedAlertError(f"alarm {alarm.AlarmName!r} is in state {alarm.NewStateValue}, not ALARM")
    region = alarm.AlarmArn.split(":")[3] if alarm.AlarmArn and alarm.AlarmArn.count(":") >= 5 else None
    return Incident(
        incident_id=incident_id_for(function, alarm.StateChangeTime, alarm.AlarmName),
        function_name=function,
        source="cloudwatch_alarm",
        detected_at=alarm.StateChangeTime,
        alarm_name=alarm.AlarmName,
        metric_name=alarm.Trigger.MetricName,
        namespace=alarm.Trigger.Namespace,
        reason=(alarm.NewStateReason or "")[:2000] or None,
        region=region,
        account_id=alarm.AWSAccountId,
    )


def _from_project_alert(alert: ProjectAlert) -> Incident:
    detected = alert.detected_at
    return Incident(
        incident_id=incident_id_for(alert.function_name, detected, alert.alert_id or alert.error_type or ""),
        function_name=alert.function_name,
        source="alert",
        detected_at=detected,
        error_type=alert.error_type,
        error_message=alert.error_message,
        region=alert.region,
        account_id=alert.account_id,
    )
