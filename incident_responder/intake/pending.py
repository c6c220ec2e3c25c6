"""INGEST: an alarm's incident (its id, what it watched), and the alarms that wait for ingest to name their function.

An alarm on a queue (:class:`QueueAlarm`) and a composite alarm (:class:`CompositeAlarm`) name no function:
:mod:`incident_responder.intake.resolve` finds it in the account, then each gives its incident.
"""

from __future__ import annotations

import hashlib
import re

from pydantic import BaseModel, Field

from incident_responder.core.contracts import Incident
from incident_responder.intake.shapes import AlarmNotification, AlarmTrigger


class QueueAlarm(BaseModel):
    """An alarm on a queue, waiting to be resolved to the function that reads the queue."""

    alarm: AlarmNotification
    queue_name: str
    queue_arn: str = Field(description="arn:PARTITION:sqs:REGION:ACCOUNT:NAME, from the alarm's own ARN and account")

    def incident(self, function_name: str, resolved_from: str) -> Incident:
        """The incident once ``function_name`` is known (the id depends on it, as for any alarm)."""
        return alarm_incident(self.alarm, function_name, resolved_from=resolved_from)


class CompositeAlarm(BaseModel):
    """A composite alarm, waiting to be resolved to the function its child alarms in ALARM watch."""

    alarm: AlarmNotification
    children: list[str] = Field(description="the child alarms that set it off, else every ALARM() term of its rule")
    triggered: bool = Field(description="children come from the notification's TriggeringChildren (not the rule)")

    def incident(
        self, function_name: str, resolved_from: str, qualifier: str | None = None, trigger: AlarmTrigger | None = None
    ) -> Incident:
        """The incident once the child alarms have named the function (and the metric they watch)."""
        return alarm_incident(
            self.alarm, function_name, resolved_from=resolved_from, qualifier=qualifier, trigger=trigger
        )


def incident_id_for(function_name: str, detected_at: str, discriminator: str) -> str:
    """``<function>-<yyyymmddTHHMMSS>-<hash>``: at most 80 chars of [A-Za-z0-9_-]."""
    stamp = re.sub(r"[^0-9T]", "", detected_at.split(".")[0].split("+")[0].rstrip("Z"))[:15]
    digest = hashlib.sha256(f"{function_name}|{detected_at}|{discriminator}".encode()).hexdigest()[:10]
    return f"{function_name[:50]}-{stamp}-{digest}"


def alarm_incident(
    alarm: AlarmNotification,
    function: str,
    resolved_from: str | None = None,
    qualifier: str | None = None,
    trigger: AlarmTrigger | None = None,
) -> Incident:
    """``trigger``: what the metric alarm watches (for a composite, the child alarm that named the function)."""
    region = alarm.AlarmArn.split(":")[3] if alarm.AlarmArn and alarm.AlarmArn.count(":") >= 5 else None
    trigger = trigger or alarm.Trigger or AlarmTrigger()
    return without_secrets(
        Incident(
            incident_id=incident_id_for(function, alarm.StateChangeTime, alarm.AlarmName),
            function_name=function,
            qualifier=qualifier,
            source="cloudwatch_alarm",
            detected_at=alarm.StateChangeTime,
            resolved_from=resolved_from,
            alarm_name=alarm.AlarmName,
            metric_name=_metric_names(trigger),
            namespace=trigger.Namespace or next((m.Namespace for m in trigger.metrics() if m.Namespace), None),
            reason=(alarm.NewStateReason or "")[:2000] or None,
            region=region,
            account_id=alarm.AWSAccountId,
        )
    )


def _metric_names(trigger: AlarmTrigger) -> str | None:
    """The metric the alarm watches; for metric math, the metrics it reads (``Errors, Invocations``)."""
    names = [trigger.MetricName] if trigger.MetricName else [m.MetricName for m in trigger.metrics() if m.MetricName]
    return ", ".join(dict.fromkeys(names))[:200] or None


# The alert's free text: what a failing function or the person who wrote the alarm put in it.
FREE_TEXT_FIELDS = ("reason", "error_type", "error_message")


def without_secrets(incident: Incident) -> Incident:
    """The incident with secrets redacted from the alert's own text (an alarm's reason, an alert's error message):
    what the agents read, the state table keeps and the report shows. Each field keeps its length limit. Names
    (the alarm's, its metric's) stay as they are: they find the alarm again."""
    from incident_responder.redaction.redactor import default_redactor

    redact = default_redactor().text
    changed = {}
    for name in FREE_TEXT_FIELDS:
        value = getattr(incident, name)
        if isinstance(value, str) and (redacted := redact(value)) != value:
            limit = next((m.max_length for m in Incident.model_fields[name].metadata if hasattr(m, "max_length")), None)
            changed[name] = redacted[:limit] if limit else redacted
    return incident.model_copy(update=changed) if changed else incident
