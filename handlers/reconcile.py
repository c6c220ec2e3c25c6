"""Safety nets: no incident stays active after its execution has ended.

``handler``: EventBridge "Step Functions Execution Status Change" (FAILED, TIMED_OUT, ABORTED) ->
mark the incident FAILED unless it already reached a terminal status (REMEDIATION_FAILED when it was changing the
account), give back the resources it leased, and alarm the operators (OPERATOR_TOPIC_ARN) of every change it left
unverified (:mod:`incident_responder.remediation.handover`).
``sweep_handler``: scheduled; incidents active for longer than STUCK_AFTER_MINUTES are reconciled,
and an execution still running past that is stopped first. It counts what it sees: ApprovalsPending (incidents
waiting for a person) and ActiveIncidents, gauges as of each sweep.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from incident_responder.core import runtime_hooks
from incident_responder.core.aws import AwsClients
from incident_responder.core.settings import ReconcileSettings, SweepSettings, at_cold_start
from incident_responder.remediation.handover import hand_over
from incident_responder.state.lifecycle import get_incident_state, incident_id_of, reconcile_execution, sweep_stuck

logger = Logger(service="incident-responder")
metrics = Metrics(namespace="IncidentResponder", service="reconcile")
runtime_hooks.register()  # no SnapStart here (template.yaml); turning it on needs no code change
# One module serves two functions; Lambda names the one it runs in _HANDLER, so each validates its own.
reconcile_settings = at_cold_start(ReconcileSettings)
sweep_settings = (
    at_cold_start(SweepSettings) if os.environ.get("_HANDLER", "").endswith("sweep_handler") else SweepSettings.current
)


@logger.inject_lambda_context(log_event=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    table = reconcile_settings().incident_state_table
    detail = event.get("detail") or {}
    arn, status = detail.get("executionArn"), detail.get("status")
    if not arn or not status:
        raise ValueError("not a Step Functions Execution Status Change event: detail.executionArn/status missing")
    config, clients = reconcile_settings(), AwsClients.shared()
    cause = detail.get("cause") or detail.get("error")
    action = reconcile_execution(clients, table, arn, status, cause)
    out: dict[str, Any] = {"execution_arn": arn, "action": action}
    state = get_incident_state(clients, table, incident_id_of(arn)) if action != "still_running" else None
    if state is not None:  # whatever it leased is freed; a change it left unverified goes to a person
        done = hand_over(
            clients,
            table=table,
            incident_id=state["incident_id"],
            function_name=str(state.get("function_name", "?")),
            reason=f"execution {status.lower()}" + (f": {cause}" if cause else ""),
            alarm=action == "marked_remediation_failed",
            topic_arn=config.operator_topic_arn,
        )
        out["handed_over"] = done.model_dump()
    logger.info("reconciled", extra={"execution_arn": arn, "execution_status": status, **out})
    return out


@metrics.log_metrics
@logger.inject_lambda_context(log_event=False)
def sweep_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    config = sweep_settings()
    active: dict[str, int] = {}
    done = sweep_stuck(
        AwsClients.shared(),
        config.incident_state_table,
        older_than_minutes=config.stuck_after_minutes,
        active=active,
    )
    metrics.add_metric(name="ApprovalsPending", unit=MetricUnit.Count, value=active.get("AWAITING_APPROVAL", 0))
    metrics.add_metric(name="ActiveIncidents", unit=MetricUnit.Count, value=sum(active.values()))
    logger.info("swept", extra={"reconciled": done, "active": active})
    return {"reconciled": done, "active": active}
