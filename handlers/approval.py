"""AWAITING_APPROVAL: the approval request (a waitForTaskToken task) and the approval page (a function URL).

``request_handler`` (ApprovalRequestFunction): in ``{"incident", "review", "task_token", "timeout_seconds",
"execution_arn"}``, out ``{"requested": true, "approval_expires_at"}``; stores the record with the token
hashed and sends the approve / reject links (:class:`~incident_responder.core.settings.ApprovalRequestSettings`).

``endpoint_handler`` (ApprovalEndpointFunction, function URL with AuthType NONE, payload format 2.0): GET
shows the page and never decides (mail scanners prefetch links); POST decides once
(:class:`~incident_responder.core.settings.ApprovalEndpointSettings`). The link's token is the only
credential: it is never logged.
"""

from __future__ import annotations

import base64
import binascii
import os
import warnings
from typing import Any
from urllib.parse import parse_qsl

from aws_lambda_powertools import Logger, Metrics
from botocore.exceptions import BotoCoreError, ClientError

from incident_responder.approval.errors import (
    ApprovalUnavailableError,
    InvalidApprovalRequestError,
    MalformedApprovalRequestError,
)
from incident_responder.approval.page import MAX_FORM_BYTES, HttpResponse, handle_http, render_refusal_page
from incident_responder.approval.record import flat
from incident_responder.approval.request import request_approval
from incident_responder.approval.telemetry import record_page, record_request, record_unavailable
from incident_responder.core import runtime_hooks
from incident_responder.core.aws import AwsClients, retry_passing_aws_errors
from incident_responder.core.contracts import build_all, incident_from_event
from incident_responder.core.members import incident_clients
from incident_responder.core.settings import ApprovalEndpointSettings, ApprovalRequestSettings, at_cold_start
from incident_responder.core.tracing import lambda_tracer

# One module serves two functions; Lambda names the one it runs in _HANDLER, so each validates its own.
_RUNNING = os.environ.get("_HANDLER", "")
request_settings = (
    at_cold_start(ApprovalRequestSettings) if _RUNNING.endswith("request_handler") else ApprovalRequestSettings.current
)
endpoint_settings = (
    at_cold_start(ApprovalEndpointSettings)
    if _RUNNING.endswith("endpoint_handler")
    else ApprovalEndpointSettings.current
)

logger = Logger(service="incident-responder")
metrics = Metrics(namespace="IncidentResponder", service="approval")
# The function URL's /health answer records no metric; Powertools would warn on each one (its documented filter).
warnings.filterwarnings("ignore", "No application metrics to publish", UserWarning)
tracer = lambda_tracer("incident-responder")
# SnapStart: built before the snapshot, refreshed after each restore (incident_responder.core.runtime_hooks).
runtime_hooks.register(build_all)


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@retry_passing_aws_errors
def request_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    incident = incident_from_event(event)
    logger.append_keys(incident_id=incident.incident_id, function_name=incident.function_name)
    config = request_settings()
    try:
        timeout_seconds = int(event["timeout_seconds"])
        review, task_token, execution_arn = event["review"], event["task_token"], event["execution_arn"]
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidApprovalRequestError(f"the approval request event lacks {exc}") from None
    expires_at = request_approval(
        incident_clients(incident.account_id, incident.region, "read"),
        table=config.incident_state_table,
        topic_arn=config.approval_topic_arn,
        approval_url=config.approval_url,
        incident=incident,
        review=review,
        task_token=task_token,
        timeout_seconds=timeout_seconds,
        execution_arn=execution_arn,
        ttl_days=config.incident_ttl_days,
        chat_topic_arn=config.chat_topic_arn,
    )
    record_request(logger, metrics, expires_at, len(review["actions"]))
    return {"requested": True, "approval_expires_at": expires_at}


def _form(event: dict[str, Any]) -> dict[str, str]:
    body = event.get("body") or ""
    raw = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    if event.get("isBase64Encoded"):
        try:
            raw = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise MalformedApprovalRequestError("the form could not be read") from None
    if len(raw) > MAX_FORM_BYTES:
        raise MalformedApprovalRequestError("the form is too large")
    try:
        return dict(parse_qsl(raw.decode("utf-8"), keep_blank_values=True, strict_parsing=False))
    except (UnicodeDecodeError, ValueError):
        raise MalformedApprovalRequestError("the form could not be read") from None


def _query(event: dict[str, Any]) -> dict[str, str]:
    if event.get("rawQueryString"):
        return dict(parse_qsl(event["rawQueryString"], keep_blank_values=True))
    return dict(event.get("queryStringParameters") or {})


def link_identity(http: dict[str, Any]) -> str:
    """Who decided through a link: whoever held it (a bearer secret), seen from where and with what."""
    source = flat(http.get("sourceIp"), 64) or "unknown address"
    agent = flat(http.get("userAgent"), 200) or "no user agent"
    return f"approval link (bearer secret: whoever held it) from {source}, user agent {agent}"


@logger.inject_lambda_context(log_event=False)  # the query string holds the token: never log the event
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def endpoint_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    http = (event.get("requestContext") or {}).get("http") or {}
    method = str(http.get("method") or "GET").upper()
    if event.get("rawPath") == "/health" and method == "GET":
        return {"statusCode": 200, "headers": {"content-type": "text/plain"}, "body": "ok"}
    config = endpoint_settings()
    try:
        query = _query(event)
        form = _form(event) if method == "POST" else None
    except MalformedApprovalRequestError as exc:
        return HttpResponse(exc.status, render_refusal_page(exc)).to_lambda()
    incident_id = flat(query.get("incident") or (form or {}).get("incident"), 80)
    logger.append_keys(incident_id=incident_id)
    try:
        response = handle_http(
            AwsClients.shared(),
            table=config.incident_state_table,
            method=method,
            query=query,
            form=form,
            decided_by=link_identity(http),
        )
    except (ClientError, BotoCoreError) as exc:
        record_unavailable(logger, exc)
        refusal = ApprovalUnavailableError("AWS did not answer as expected; nothing was decided: try the link again")
        response = HttpResponse(refusal.status, render_refusal_page(refusal))
    record_page(logger, metrics, method, response.status)
    return response.to_lambda()
