"""INVESTIGATING: run the investigator agent on one incident.

Input: the incident (``{"incident": {...}}`` or the incident itself). Output (under 256 KB): outcome
DIAGNOSED or NO_DIAGNOSIS, the diagnosis summary, the diagnosis or its reference, evidence figures and
metrics. Typed errors (McpConnectionError, McpInitError, ModelAuthError, ModelTransientError,
InvalidIncidentError, ConfigurationError) reach the state machine by class name for its Retry / Catch.
The environment is validated at cold start (:class:`incident_responder.core.settings.InvestigateSettings`).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics

from incident_responder.agent.configured import agent_limits, chat_model, load_model_provider, mcp_server
from incident_responder.agent.graph import agent_graph
from incident_responder.core import runtime_hooks
from incident_responder.core.aws import retry_passing_aws_errors
from incident_responder.core.contracts import build_all, incident_from_event
from incident_responder.core.settings import InvestigateSettings, at_cold_start
from incident_responder.core.tracing import AWS_AND_HTTP_CALLS, lambda_tracer
from incident_responder.investigation.investigate import run_investigation
from incident_responder.investigation.telemetry import record_investigation
from incident_responder.state.store import RecordStore

settings = at_cold_start(InvestigateSettings)

logger = Logger(service="incident-responder")
metrics = Metrics(namespace="IncidentResponder", service="investigate")
tracer = lambda_tracer("incident-responder", AWS_AND_HTTP_CALLS)
# SnapStart: built before the snapshot, refreshed after each restore (incident_responder.core.runtime_hooks).
runtime_hooks.register(build_all, agent_graph, lambda: load_model_provider(settings()))


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@retry_passing_aws_errors
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    incident = incident_from_event(event)
    logger.append_keys(incident_id=incident.incident_id, function_name=incident.function_name)
    config = settings()
    limits = agent_limits(config, context.get_remaining_time_in_millis())
    result, run = run_investigation(
        incident,
        model=chat_model(config),
        servers=[mcp_server(config, "diagnostics", config.diagnostics_mcp_url)],
        store=RecordStore.from_settings(config),
        limits=limits,
        remaining_ms=context.get_remaining_time_in_millis,
    )
    record_investigation(logger, metrics, result, run.payload)
    return result.model_dump(mode="json")
