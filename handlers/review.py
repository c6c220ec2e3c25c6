"""REVIEWING: run the critic agent on a proposal; the approval policy decides who approves.

Input: ``{"incident": {...}, "investigation": {...}, "proposal": ProposalResult}`` (the diagnosis and the
proposal inline or by reference). Output: :class:`incident_responder.review.review.ReviewResult` (outcome
APPROVED, NEEDS_APPROVAL or REJECTED, one verdict per action, the surviving actions and their digest,
and the automatic approval when AUTO_APPROVE=low allowed one). Nothing here changes the account. Typed
errors reach the state machine by class name; a critic that ends without a review leaves every action to
a person instead of failing. The environment is validated at cold start
(:class:`incident_responder.core.settings.ReviewSettings`).
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
from incident_responder.core.settings import ReviewSettings, at_cold_start
from incident_responder.core.tracing import AWS_AND_HTTP_CALLS, lambda_tracer
from incident_responder.memory.rules import read_memory, started_at
from incident_responder.proposal.propose import diagnosis_for
from incident_responder.review.review import run_review
from incident_responder.state.store import RecordStore

settings = at_cold_start(ReviewSettings)

logger = Logger(service="incident-responder")
metrics = Metrics(namespace="IncidentResponder", service="review")
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
    memory = None
    if config.incident_state_table:  # the function's past incidents: one GetItem, for the policy's memory rules
        memory = read_memory(
            clients,
            config.incident_state_table,
            incident.function_name,
            incident_id=incident.incident_id,
            started_at=started_at(incident.detected_at),
            days=config.memory_days,
            recurrence_hours=config.recurrence_hours,
        )
    result, run = run_review(
        incident,
        diagnosis,
        event.get("proposal"),
        model=chat_model(config),
        servers=[mcp_server(config, "remediation", config.remediation_mcp_url)],
        store=store,
        limits=agent_limits(config, context.get_remaining_time_in_millis()),
        auto_approve=config.auto_approve,
        auto_approve_iam_and_network=config.auto_approve_iam_and_network,
        clients=clients,
        remaining_ms=context.get_remaining_time_in_millis,
        memory=memory,
    )
    logger.info("agent_metrics", extra={"agent_metrics": result.metrics})
    logger.info(
        "review_summary",
        extra={
            "review_summary": {
                "outcome": result.outcome,
                "end_reason": result.end_reason,
                "verdicts": {str(v.execution_order): v.verdict.value for v in result.verdicts},
                "policy_overrides": {str(v.execution_order): v.policy for v in result.verdicts if v.policy},
                "actions": [a.action_type.value for a in result.actions],
                "rejected": len(result.rejected),
                "risk": result.risk,
                "auto_approved": result.approval is not None,
                "tools_called": run.tools_called if run is not None else [],
                "history": result.history,
            }
        },
    )
    metrics.add_metadata(key="outcome", value=result.outcome)
    metrics.add_metric(name="ReviewedActions", unit=MetricUnit.Count, value=len(result.verdicts))
    metrics.add_metric(name="ApprovedByCritic", unit=MetricUnit.Count, value=result.metrics["verdicts_approve"])
    metrics.add_metric(name="RejectedInReview", unit=MetricUnit.Count, value=len(result.rejected))
    metrics.add_metric(name="PolicyOverrides", unit=MetricUnit.Count, value=result.metrics["policy_overrides"])
    metrics.add_metric(name="AutoApproved", unit=MetricUnit.Count, value=int(result.approval is not None))
    metrics.add_metric(name="LlmCalls", unit=MetricUnit.Count, value=result.metrics["llm_calls"])
    return result.model_dump(mode="json")
