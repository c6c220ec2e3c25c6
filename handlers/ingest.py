"""SNS -> ingest: each alert starts an incident, joins the one under way for its fault, is ignored, or is rejected.

See :mod:`incident_responder.intake.ingest` for the outcomes. A rejected alert is logged with the reason and
sent, untouched, to the dead-letter queue: neither retried pointlessly nor lost, and it starts
nothing. An ignored one (an alarm's change into OK or INSUFFICIENT_DATA) is logged at INFO and counted under
AlertsIgnored: it pages nobody. An event that is not SNS at all raises, so Lambda's own retries and the function's
dead-letter queue keep it; so do AWS errors (throttled DynamoDB or Step Functions), which are retried.
"""

from __future__ import annotations

import base64
import functools
import re
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from incident_responder.core import runtime_hooks
from incident_responder.core.aws import AwsClients
from incident_responder.core.settings import IngestSettings, at_cold_start
from incident_responder.intake.ingest import ingest_alert
from incident_responder.intake.shapes import SnsEvent

logger = Logger(service="incident-responder")
metrics = Metrics(namespace="IncidentResponder", service="ingest")
settings = at_cold_start(IngestSettings)
# No SnapStart for ingest (template.yaml); registered all the same, so turning it on needs no code change.
runtime_hooks.register()

METRIC_FOR_OUTCOME = {
    "started": "IncidentsStarted",
    "duplicate": "AlertsDuplicate",
    "attached": "AlertsAttached",
    "ignored": "AlertsIgnored",
    "rejected": "AlertsRejected",
}


@functools.cache
def sqs_text() -> re.Pattern[str]:
    """What an SQS message body may contain (SendMessage rejects anything else with InvalidMessageContents);
    compiled when an alert is first rejected (the character class takes milliseconds to compile)."""
    return re.compile("^[\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*$")


def dead_letter(queue_url: str, message: str, reason: str, message_id: str) -> None:
    """The alert as it came, with the reason; base64 when SQS could not carry its characters."""
    encoding = "text" if sqs_text().match(message) else "base64"
    body = message if encoding == "text" else base64.b64encode(message.encode("utf-8", "surrogatepass")).decode()
    AwsClients.shared().get("sqs").send_message(
        QueueUrl=queue_url,
        MessageBody=body or "(empty)",
        MessageAttributes={
            "rejected_by": {"DataType": "String", "StringValue": "ingest"},
            "reason": {"DataType": "String", "StringValue": reason[:1000]},
            "sns_message_id": {"DataType": "String", "StringValue": message_id},
            "body_encoding": {"DataType": "String", "StringValue": encoding},
        },
    )


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    records = SnsEvent.model_validate(event).Records  # not SNS: raise, Lambda retries then its DLQ keeps it
    config = settings()
    summary: dict[str, list[str]] = {outcome: [] for outcome in METRIC_FOR_OUTCOME}
    for record in records:
        message, message_id = record.Sns.Message, record.Sns.MessageId
        result = ingest_alert(
            AwsClients.shared(),
            message,
            state_machine_arn=config.state_machine_arn,
            state_table=config.incident_state_table,
            baseline_table=config.baseline_table,
            window_seconds=config.alert_group_window_minutes * 60,
        )
        if result.outcome == "rejected":
            logger.error(
                "alert rejected and sent to the dead-letter queue",
                extra={"reason": result.reason, "sns_message_id": message_id},
            )
            dead_letter(config.dead_letter_queue_url, message, result.reason or "rejected", message_id)
            summary["rejected"].append(message_id)
        elif result.outcome == "ignored":
            logger.info("alert ignored", extra={"reason": result.reason, "sns_message_id": message_id})
            summary["ignored"].append(message_id)
        else:
            logger.info(f"alert {result.outcome}", extra=result.model_dump(exclude_none=True))
            summary[result.outcome].append(result.incident_id or "")
        metrics.add_metric(name=METRIC_FOR_OUTCOME[result.outcome], unit=MetricUnit.Count, value=1)
    return summary
