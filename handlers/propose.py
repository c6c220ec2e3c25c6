"""PROPOSING: run the proposer agent on a diagnosed incident; guardrails judge what it proposes.

Input: ``{"incident": {...}, "investigation": {...}}`` (the diagnosis inline or by reference).
Output: outcome PROPOSAL_READY or NO_PROPOSAL, the proposal (or its reference), counts, metrics, and
the operator notification built from typed fields. Nothing here changes the account. The environment
is validated at cold start (:class:`incident_responder.core.settings.ProposeSettings`).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from incident_responder.agent.configured import agent_limits, chat_model, load_model_provider, mcp_server
from incident_responder.agent.graph import agent_graph
from incident_responder.core import runtime_hooks
from incident_responder.core.aws import retry_passing_aws_errors
from incident_responder.core.contracts import build_all, incident_from_event
from incident_responder.core.members import incident_clients
from incident_responder.core.settings import ProposeSettings, at_cold_start
from incident_responder.core.tracing import AWS_AND_HTTP_CALLS, lambda_tracer
from incident_responder.proposal.propose import diagnosis_for, run_proposal
from incident_responder.state.store import RecordStore

settings = at_cold_start(ProposeSettings)

logger = Logger(service="incident-responder")
metrics = Metrics(namespace="IncidentResponder", service="propose")
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
    clients = incident_clients(incident.account_id, incident.region, "read")
    store = RecordStore.from_settings(config)
    diagnosis = diagnosis_for(clients, store, incident.incident_id, event.get("investigation"))
    result, run = run_proposal(
        incident,
        diagnosis,
        model=chat_model(config),
        servers=[mcp_server(config, "remediation", config.remediation_mcp_url)],
        store=store,
        limits=agent_limits(config, context.get_remaining_time_in_millis()),
        baseline_table=config.baseline_table,
        clients=clients,
        remaining_ms=context.get_remaining_time_in_millis,
    )
    logger.info(
        "agent_metrics",
        extra={
            "agent_metrics": {
                **result.metrics,
                "prompt_tokens": run.usage.input_tokens,
                "completion_tokens": run.usage.output_tokens,
            }
        },
    )
    logger.info(
        "proposal_summary",
        extra={
            "proposal_summary": {
                "outcome": result.outcome,
                "end_reason": result.end_reason,
                "actions": [a["action_type"] for a in (result.proposal or {}).get("actions", [])],
                "rejected": result.rejected,
                "unresolvable_faults": result.unresolvable_faults,
            }
        },
    )
    metrics.add_metadata(key="outcome", value=result.outcome)
    metrics.add_metric(name="ProposedActions", unit=MetricUnit.Count, value=result.actions)
    metrics.add_metric(name="RejectedActions", unit=MetricUnit.Count, value=result.rejected)
    metrics.add_metric(name="LlmCalls", unit=MetricUnit.Count, value=result.metrics["llm_calls"])
    return result.model_dump(mode="json")
