"""INVESTIGATING: run the supervisor agent on one incident.

Input: the incident (``{"incident": {...}}`` or the incident itself). Output (under 256 KB): outcome
DIAGNOSED or NO_DIAGNOSIS, the diagnosis summary, the diagnosis or its reference, evidence figures and
metrics. Typed errors (McpConnectionError, McpInitError, ModelAuthError, ModelTransientError,
InvalidIncidentError, ConfigurationError) reach the state machine by class name for its Retry / Catch.
The environment is validated at cold start (:class:`incident_responder.core.settings.InvestigateSettings`).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from incident_responder.agent.graph import agent_graph
from incident_responder.core import runtime_hooks
from incident_responder.core.aws import retry_passing_aws_errors
from incident_responder.core.contracts import (
    InvalidIncidentError,  # noqa: F401 - the ASL error name
    build_all,
    incident_from_event,
)
from incident_responder.core.settings import InvestigateSettings, at_cold_start
from incident_responder.core.tracing import AWS_AND_HTTP_CALLS, lambda_tracer
from incident_responder.investigation.investigate import run_investigation

settings = at_cold_start(InvestigateSettings)

logger = Logger(service="incident-responder")
metrics = Metrics(namespace="IncidentResponder", service="investigate")
tracer = lambda_tracer("incident-responder", AWS_AND_HTTP_CALLS)
# SnapStart: built before the snapshot, refreshed after each restore (incident_responder.core.runtime_hooks).
runtime_hooks.register(build_all, agent_graph, lambda: settings().load_model_provider())


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@retry_passing_aws_errors
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    incident = incident_from_event(event)
    logger.append_keys(incident_id=incident.incident_id, function_name=incident.function_name)
    config = settings()
    limits = config.limits(context.get_remaining_time_in_millis())
    result, run = run_investigation(
        incident,
        model=config.chat_model(),
        servers=[config.mcp_server("diagnostics", config.diagnostics_mcp_url)],
        store=config.store(),
        limits=limits,
        remaining_ms=context.get_remaining_time_in_millis,
    )
    m = result.metrics
    logger.info(
        "agent_metrics",
        extra={
            "agent_metrics": {
                "llm_calls": m.llm_calls,
                "tool_calls": m.tool_calls,
                "prompt_tokens": m.input_tokens,
                "completion_tokens": m.output_tokens,
                "total_tokens": m.total_tokens,
                "token_budget_left": m.token_budget_left,
                "tool_output_bytes": m.tool_output_bytes,
                "latency_ms": m.latency_ms,
            }
        },
    )
    diagnosis = run.payload
    logger.info(
        "agent_reasoning_summary",
        extra={
            "agent_reasoning_summary": {
                "outcome": result.outcome,
                "end_reason": result.end_reason,
                "tools_called": result.tools_called,
                "fault_types": [f.value for f in diagnosis.fault_types] if diagnosis else [],
                "root_cause": diagnosis.root_cause if diagnosis else None,
                "severity": diagnosis.severity if diagnosis else None,
                "grounded_ratio": m.grounded_ratio,
                "steps": m.llm_calls,
            }
        },
    )
    metrics.add_metadata(key="outcome", value=result.outcome)
    metrics.add_metric(name="LlmCalls", unit=MetricUnit.Count, value=m.llm_calls)
    metrics.add_metric(name="ToolCalls", unit=MetricUnit.Count, value=m.tool_calls)
    metrics.add_metric(name="TotalTokens", unit=MetricUnit.Count, value=m.total_tokens)
    metrics.add_metric(name="GroundedRatio", unit=MetricUnit.Percent, value=m.grounded_ratio * 100)
    metrics.add_metric(name="InvestigationLatency", unit=MetricUnit.Milliseconds, value=m.latency_ms)
    return result.model_dump(mode="json")
