"""INGEST: an alarm's change as EventBridge publishes it ("CloudWatch Alarm State Change", e.g. a rule whose target is
the incident topic) and as an alarm's Lambda action sends it, read into the SNS notification's fields; and the one
rule every shape keeps: an alert names one account and one Region for its alarm.

Both events carry Powertools' ``CloudWatchAlarmData``. Nothing here calls AWS.
"""

from __future__ import annotations

import re
from typing import Any

from incident_responder.core.contracts import ACCOUNT_RE, REGION_NAME_RE
from incident_responder.intake.errors import MalformedAlertError

ACCOUNT_ID_RE = re.compile(ACCOUNT_RE)
REGION_RE = re.compile(REGION_NAME_RE)


def consistent(what: str, field: str, claims: dict[str, Any]) -> None:
    """An alert that names two accounts (or Regions) for one alarm contradicts itself: which one it is about is
    unknown, so neither is trusted (one of them passing the home check proves nothing). A value that is no account
    id or Region at all is no claim: what reads it says what is wrong with it."""
    shape = ACCOUNT_ID_RE if field == "account" else REGION_RE
    said = {source: value for source, value in claims.items() if isinstance(value, str) and shape.fullmatch(value)}
    if len(set(said.values())) > 1:
        listed = ", ".join(f"{value[:60]!r} ({source})" for source, value in said.items())
        raise MalformedAlertError(f"{what} contradicts itself about its {field}: {listed}")


def notification_of_event(event: dict[str, Any]) -> dict[str, Any]:
    """The SNS notification's fields from the same change as EventBridge publishes it ("CloudWatch Alarm State
    Change": account, region, resources, detail) or as an alarm's Lambda action sends it (alarmArn, accountId,
    alarmData); ``detail`` and ``alarmData`` are what Powertools' ``CloudWatchAlarmData`` reads."""
    # Powertools' data classes package loads every event source's class: only for these shapes.
    from aws_lambda_powertools.utilities.data_classes.cloud_watch_alarm_event import CloudWatchAlarmData

    alarm_data = event.get("alarmData", event.get("detail"))
    if event.get("source") != "aws.cloudwatch" or not isinstance(alarm_data, dict):
        raise MalformedAlertError("alert is an event, but not a CloudWatch alarm's (source aws.cloudwatch)")
    if "detail" in event and event.get("detail-type") != "CloudWatch Alarm State Change":
        kind = str(event.get("detail-type"))[:100]
        raise MalformedAlertError(f"alert is a CloudWatch event of type {kind!r}, not 'CloudWatch Alarm State Change'")
    data = CloudWatchAlarmData(alarm_data)
    resources = event.get("resources")
    arn = event.get("alarmArn") or (resources[0] if isinstance(resources, list) and resources else None)
    # arn:PARTITION:cloudwatch:REGION:ACCOUNT:alarm:NAME
    parts = arn.split(":") if isinstance(arn, str) and arn.startswith("arn:") else []
    account, region = (parts[4], parts[3]) if len(parts) > 5 else (None, None)
    claims = {"accountId": event.get("accountId"), "account": event.get("account"), "the alarm's ARN": account}
    consistent("alarm event", "account", claims)
    consistent("alarm event", "Region", {"region": event.get("region"), "the alarm's ARN": region})
    try:
        state, previous, configuration = data.state, data.get("previousState"), data.configuration
        children = (state.reason_data_decoded or {}).get("triggeringAlarms") if configuration.alarm_rule else None
        body = {
            "AlarmName": data.alarm_name,
            "NewStateValue": state.value,
            "NewStateReason": state.get("reason"),
            "OldStateValue": previous.get("value") if isinstance(previous, dict) else None,
            "StateChangeTime": state.timestamp,
            "AlarmArn": arn,
            "AWSAccountId": event.get("accountId") or event.get("account"),
        }
        if configuration.alarm_rule is not None:
            body["AlarmRule"] = configuration.alarm_rule
            body["TriggeringChildren"] = [
                {"Arn": c.get("arn"), "State": {"Value": (c.get("state") or {}).get("value")}}
                for c in children or []
                if isinstance(c, dict)
            ]
        else:
            body["Trigger"] = {"Metrics": [_metric_query(m) for m in configuration.metrics]}
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise MalformedAlertError(f"alert is a CloudWatch alarm event without {str(exc)[:100]}") from None
    return body


def _metric_query(metric: Any) -> dict[str, Any]:
    """An alarm event's metric (``metricStat.metric``: namespace, name, dimensions as a mapping) as an SNS Trigger's."""
    stat = metric.get("metricStat") or {}
    watched = stat.get("metric") or {}
    dimensions = watched.get("dimensions") or {}
    return {
        "Id": metric.get("id"),
        "Expression": metric.get("expression"),
        "MetricStat": {
            "Metric": {
                "Namespace": watched.get("namespace"),
                "MetricName": watched.get("name"),
                "Dimensions": [{"name": k, "value": v} for k, v in dimensions.items()],
            }
        }
        if watched
        else None,
    }
