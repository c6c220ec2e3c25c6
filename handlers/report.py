"""An execution of the lifecycle ended (EventBridge "Step Functions Execution Status Change"): its incident's
report to the artifacts bucket, a pre-signed link to it on the proposal topic (and the chat topic when one is
configured), and the end counted: IncidentsEnded by final status, BreakerSuppressions, IncidentDuration."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from incident_responder.core import runtime_hooks
from incident_responder.core.aws import AwsClients
from incident_responder.core.settings import ReportSettings, at_cold_start
from incident_responder.reporting.delivery import deliver

logger = Logger(service="incident-responder")
metrics = Metrics(namespace="IncidentResponder", service="report")
runtime_hooks.register()
settings = at_cold_start(ReportSettings)


@metrics.log_metrics
@logger.inject_lambda_context(log_event=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    config = settings()
    detail = event.get("detail") or {}
    arn, status = detail.get("executionArn"), detail.get("status")
    if not arn or not status:
        raise ValueError("not a Step Functions Execution Status Change event: detail.executionArn/status missing")
    result = deliver(
        AwsClients.shared(),
        execution_arn=arn,
        execution_status=status,
        state_table=config.incident_state_table,
        context_table=config.incident_context_table,
        bucket=config.artifacts_bucket,
        topic_arn=config.incident_news_topic_arn,
        link_hours=config.report_link_hours,
        chat_topic_arn=config.chat_topic_arn,
        wait_seconds=config.report_settle_seconds,
        memory_ttl_days=config.memory_ttl_days,
    )
    if result["outcome"] == "reported":
        # Flushed on its own: a dimension added to `metrics` would go on every metric it flushes, and the dashboard
        # reads the other two by service alone. (Powertools' single_metric would ignore POWERTOOLS_METRICS_DISABLED.)
        ended = EphemeralMetrics(namespace=metrics.namespace, service=metrics.service)
        ended.add_dimension(name="status", value=result["status"] or "UNKNOWN")
        ended.add_metric(name="IncidentsEnded", unit=MetricUnit.Count, value=1)
        ended.flush_metrics()
        if result["status"] == "SUPPRESSED":
            metrics.add_metric(name="BreakerSuppressions", unit=MetricUnit.Count, value=1)
        if result["duration_seconds"] is not None:
            metrics.add_metric(
                name="IncidentDuration", unit=MetricUnit.Milliseconds, value=result["duration_seconds"] * 1000
            )
    logger.info("incident_reported", extra={k: v for k, v in result.items() if k != "report_url"})
    return {k: v for k, v in result.items() if k != "report_url"}  # the link is a credential: in the message only
