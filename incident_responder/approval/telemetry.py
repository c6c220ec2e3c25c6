"""AWAITING_APPROVAL: the log lines and the EMF metrics the approval functions write.

Written through the handler's Powertools ``Logger`` and ``Metrics`` (namespace ``IncidentResponder``, service
``approval``). Never the link's token: it is the only credential, so no line carries the request or an AWS
error's message (which could echo it).

* request: log ``approval_requested`` (``approval_expires_at``, ``actions``); metric ``ApprovalsRequested``;
* page: log ``approval_page`` (``method``, ``status``); metric ``ApprovalPageShown`` (GET or HEAD),
  ``ApprovalDecided`` (a POST answered 200) or ``ApprovalRefused`` (any other POST);
* AWS unavailable: log ``approval_unavailable`` (``error_type``, ``error_code``) at error level.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError


def record_request(logger: Logger, metrics: Metrics, expires_at: str, actions: int) -> None:
    """An approval request sent: its log line and metric."""
    logger.info("approval_requested", extra={"approval_expires_at": expires_at, "actions": actions})
    metrics.add_metric(name="ApprovalsRequested", unit=MetricUnit.Count, value=1)


def record_unavailable(logger: Logger, exc: ClientError | BotoCoreError) -> None:
    """AWS did not answer the approval page as expected."""
    # Only the error's type and code: a message could echo the request, and the request holds the token.
    code = exc.response.get("Error", {}).get("Code") if isinstance(exc, ClientError) else None
    logger.error("approval_unavailable", extra={"error_type": type(exc).__name__, "error_code": code})


def record_page(logger: Logger, metrics: Metrics, method: str, status: int) -> None:
    """What the approval page answered: its log line and metric."""
    logger.info("approval_page", extra={"method": method, "status": status})
    name = "ApprovalPageShown" if method != "POST" else "ApprovalDecided" if status == 200 else "ApprovalRefused"
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
