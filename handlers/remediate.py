"""REMEDIATING and ROLLING_BACK: apply the approved actions, recording how to undo each; or undo them.

In ``{"operation": "apply", "incident", "actions", "actions_digest", "approval"}``, out
:class:`incident_responder.remediation.remediate.ApplyResult` (``outcome`` APPLIED or FAILED, ``steps``,
``failed_step``, ``error``, ``finished_at``): an AWS failure of an action is an outcome, and the state
machine rolls back. In ``{"operation": "rollback", "incident", "reason"}``, out
:class:`incident_responder.remediation.remediate.RollbackResult` (ROLLED_BACK or ROLLBACK_FAILED). In
``{"operation": "release", "incident"}`` (once REMEDIATED), out ``{"released": [resource, ...]}``: the leases the
incident still held, given back. ``execution`` (apply, rollback): the execution the leases are tied to. Typed errors reach
the state machine by class name, always before anything changed: actions that are not the approved ones
(``ApprovalMismatchError``), a ledger of other actions (``LedgerConflictError``), a malformed event
(``InvalidRemediationInputError``, ``InvalidIncidentError``). The environment is validated at cold start
(:class:`incident_responder.core.settings.RemediateSettings`).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics

from incident_responder.core import runtime_hooks
from incident_responder.core.aws import retry_passing_aws_errors
from incident_responder.core.contracts import build_all, incident_from_event
from incident_responder.core.members import incident_clients
from incident_responder.core.settings import RemediateSettings, at_cold_start
from incident_responder.core.tracing import lambda_tracer
from incident_responder.remediation import remediate
from incident_responder.remediation.errors import InvalidRemediationInputError
from incident_responder.remediation.telemetry import record_apply, record_release, record_rollback

settings = at_cold_start(RemediateSettings)

logger = Logger(service="incident-responder")
metrics = Metrics(namespace="IncidentResponder", service="remediate")
tracer = lambda_tracer("incident-responder")
# SnapStart: built before the snapshot, refreshed after each restore (incident_responder.core.runtime_hooks).
runtime_hooks.register(build_all)

OPERATIONS = ("apply", "rollback", "release")


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@retry_passing_aws_errors
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if not isinstance(event, dict) or event.get("operation") not in OPERATIONS:
        operation = event.get("operation") if isinstance(event, dict) else None
        raise InvalidRemediationInputError(f"operation must be one of {', '.join(OPERATIONS)}, not {operation!r}")
    incident = incident_from_event(event)
    logger.append_keys(
        incident_id=incident.incident_id, function_name=incident.function_name, operation=event["operation"]
    )
    config = settings()
    clients = incident_clients(incident.account_id, incident.region, "remediate")
    metrics.add_metadata(key="incident_id", value=incident.incident_id)
    if event["operation"] == "apply":
        result = remediate.apply(
            clients,
            table=config.incident_state_table,
            incident=incident,
            actions=event.get("actions"),
            actions_digest=event.get("actions_digest"),
            approval=event.get("approval"),
            ttl_days=config.incident_ttl_days,
            baseline_table=config.baseline_table,
            execution_arn=event.get("execution"),
        )
        record_apply(logger, metrics, result)
        return result.model_dump(mode="json")

    if event["operation"] == "release":
        released = remediate.release(clients, table=config.incident_state_table, incident=incident)
        record_release(logger, metrics, released)
        return {"released": released}
    reason = str(event.get("reason") or "")
    rollback = remediate.rollback(
        clients,
        table=config.incident_state_table,
        incident=incident,
        reason=reason,
        execution_arn=event.get("execution"),
    )
    record_rollback(logger, metrics, rollback, reason)
    return rollback.model_dump(mode="json")
