"""VERIFYING: is what the actions changed back at the baseline, and is the function healthy again?

In ``{"incident", "actions", "remediation": <the apply result>, "fault_types": [diagnosed faults]}``, out
:class:`incident_responder.remediation.verify.VerifyResult` (``outcome`` VERIFIED or NOT_FIXED, one check per
applied action, ``needs_person``, ``summary``). NOT_FIXED sends the state machine to ROLLING_BACK; what no
action could fix (a bug in the function's own code) is for a person and fails nothing. Health comes from
the function's CloudWatch metrics: the whole minutes after the apply that Lambda has finished reporting. Until the
first is, the handler waits for it if it fits in its remaining time, else raises ``HealthNotYetKnownError`` for the
state machine to verify again later. The environment is validated at cold start
(:class:`incident_responder.core.settings.VerifySettings`).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics

from incident_responder.core import runtime_hooks
from incident_responder.core.aws import retry_passing_aws_errors
from incident_responder.core.contracts import build_all, incident_from_event
from incident_responder.core.members import incident_clients
from incident_responder.core.settings import VerifySettings, at_cold_start
from incident_responder.core.tracing import lambda_tracer
from incident_responder.remediation.errors import InvalidVerificationInputError
from incident_responder.remediation.health import waiting_within
from incident_responder.remediation.telemetry import record_verification
from incident_responder.remediation.verify import verify

settings = at_cold_start(VerifySettings)

logger = Logger(service="incident-responder")
metrics = Metrics(namespace="IncidentResponder", service="verify")
tracer = lambda_tracer("incident-responder")
# SnapStart: built before the snapshot, refreshed after each restore (incident_responder.core.runtime_hooks).
runtime_hooks.register(build_all)


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@retry_passing_aws_errors
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if not isinstance(event, dict):
        raise InvalidVerificationInputError("the event must be an object")
    incident = incident_from_event(event)
    logger.append_keys(incident_id=incident.incident_id, function_name=incident.function_name)
    for field in ("actions", "remediation"):
        if field not in event:
            raise InvalidVerificationInputError(f"the event lacks {field!r}")
    result = verify(
        incident_clients(incident.account_id, incident.region, "read"),
        incident=incident,
        actions=event["actions"],
        remediation=event["remediation"],
        fault_types=event.get("fault_types") or [],
        baseline_table=settings().baseline_table,
        wait=waiting_within(context.get_remaining_time_in_millis()),
    )
    record_verification(logger, metrics, result)
    return result.model_dump(mode="json")
