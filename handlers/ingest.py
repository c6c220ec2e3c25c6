"""SNS -> ingest: turn each alert into an incident and start its lifecycle execution.

A duplicate alert (SNS delivers at least once) maps to the same execution name and starts nothing.
A malformed alert is logged with a clear reason and sent, untouched, to the dead-letter queue: it is
neither retried pointlessly nor lost. An event that is not SNS at all raises, so Lambda's own retries
and the function's dead-letter queue keep it.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser.models import SnsModel

from incident_responder.alerts import MalformedAlertError, parse_alert
from incident_responder.aws import AwsClients
from incident_responder.lifecycle import start_incident
from incident_responder.settings import IngestSettings, at_cold_start

logger = Logger(service="incident-responder")
metrics = Metrics(namespace="IncidentResponder", service="ingest")
settings = at_cold_start(IngestSettings)


def dead_letter(queue_url: str, message: str, reason: str, message_id: str) -> None:
    AwsClients.shared().get("sqs").send_message(
        QueueUrl=queue_url,
        MessageBody=message,
        MessageAttributes={
            "rejected_by": {"DataType": "String", "StringValue": "ingest"},
            "reason": {"DataType": "String", "StringValue": reason[:1000]},
            "sns_message_id": {"DataType": "String", "StringValue": message_id},
        },
    )


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    records = SnsModel.model_validate(event).Records  # not SNS: raise, Lambda retries then its DLQ keeps it
    config = settings()
    summary: dict[str, list[str]] = {"started": [], "duplicates": [], "rejected": []}
    for record in records:
        message, message_id = record.Sns.Message, record.Sns.MessageId
        try:
            incident = parse_alert(message)
        except MalformedAlertError as exc:
            logger.error(
                "malformed alert sent to the dead-letter queue",
                extra={"reason": str(exc), "sns_message_id": message_id},
            )
            body = message if isinstance(message, str) else json.dumps(message)
            dead_letter(config.dead_letter_queue_url, body, str(exc), message_id)
            summary["rejected"].append(message_id)
            metrics.add_metric(name="AlertsRejected", unit=MetricUnit.Count, value=1)
            continue
        result = start_incident(AwsClients.shared(), config.state_machine_arn, incident)
        key = "duplicates" if result.duplicate else "started"
        summary[key].append(incident.incident_id)
        logger.info("duplicate alert absorbed" if result.duplicate else "incident started", extra=result.model_dump())
        metrics.add_metric(
            name="AlertsDuplicate" if result.duplicate else "IncidentsStarted", unit=MetricUnit.Count, value=1
        )
    return summary
