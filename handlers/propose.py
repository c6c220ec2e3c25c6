"""PROPOSING: run the resolver agent on a diagnosed incident; guardrails judge what it proposes.

Input: ``{"incident": {...}, "investigation": {...}}`` (the diagnosis inline or by reference).
Output: outcome PROPOSAL_READY or NO_PROPOSAL, the proposal (or its reference), counts and metrics.
Nothing here changes the account.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from incident_responder.aws import AwsClients
from incident_responder.contracts import InvalidIncidentError, incident_from_event  # noqa: F401 - the ASL error name
from incident_responder.proposal import diagnosis_for, run_proposal

logger = Logger(service="incident-responder")
metrics = Metrics(namespace="IncidentResponder", service="propose")
tracer = Tracer(service="incident-responder")


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    incident = incident_from_event(event)
    logger.append_keys(incident_id=incident.incident_id, function_name=incident.function_name)
    clients = AwsClients.shared()
    diagnosis = diagnosis_for(clients, incident.incident_id, event.get("investigation"))
    result, run = run_proposal(incident, diagnosis, clients=clients, remaining_ms=context.get_remaining_time_in_millis)
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
