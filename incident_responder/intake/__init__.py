"""RECEIVED: an alert (a CloudWatch alarm's notification, the project's own alert) becomes one incident, or none.

alerts    read an alert into an Incident, or a pending alarm that names no function; what is refused and why
shapes    the shapes an alert arrives in: CloudWatch's alarm notification, the project's alert JSON
alarm_events  the same alarm change as EventBridge and an alarm's Lambda action send it; one account, one Region
pending   an alarm's incident, and the alarms (on a queue, composite) that wait for their function
resolve   find the function of a pending alarm in the account (baselines' event sources, child alarms)
ingest    from one alert to at most one incident: validate, group, start (and check-alert's decision)
errors    why an alert starts no incident: malformed, ignored, foreign, unresolved
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "AlertCheck",
    "AlertIgnoredError",
    "CompositeAlarm",
    "ForeignAlertError",
    "FunctionNotNamedError",
    "Home",
    "IngestOutcome",
    "MalformedAlertError",
    "QueueAlarm",
    "UnresolvedAlertError",
    "check_alert",
    "fault_signature",
    "incident_for_alert",
    "incident_from_alert",
    "ingest_alert",
    "parse_alert",
    "read_alert",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "alerts": ["Home", "fault_signature", "parse_alert", "read_alert"],
        "errors": [
            "AlertIgnoredError",
            "ForeignAlertError",
            "FunctionNotNamedError",
            "MalformedAlertError",
            "UnresolvedAlertError",
        ],
        "pending": ["CompositeAlarm", "QueueAlarm"],
        "resolve": ["incident_from_alert"],
        "ingest": ["AlertCheck", "IngestOutcome", "check_alert", "incident_for_alert", "ingest_alert"],
    },
)
