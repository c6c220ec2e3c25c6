"""REMEDIATING, ROLLING_BACK and VERIFYING: the log line and the EMF metrics each result leaves behind.

Written through the handler's Powertools ``Logger`` and ``Metrics`` (namespace ``IncidentResponder``):

* apply: log ``remediation_applied`` (``remediation``: outcome, each step's status, failed step, error);
  metadata ``outcome``, metrics ``ActionsApplied`` and ``ActionsFailed``;
* rollback: log ``remediation_rolled_back`` (``rollback``: outcome, reason, each step's status, error);
  metadata ``outcome``, metrics ``ActionsUndone`` and ``UndoFailed``;
* release: log ``released`` (``resources``: the leases given back); metric ``LeasesReleased``;
* verify: log ``verification`` (``verification``: outcome, checks, needs_person, summary); metadata
  ``outcome``, metrics ``Verified``, ``NotFixed`` and ``NeedsPerson``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

if TYPE_CHECKING:  # types only: the remediate function need not load the verification code
    from incident_responder.remediation.results import ApplyResult, RollbackResult
    from incident_responder.remediation.verify import VerifyResult


def record_release(logger: Logger, metrics: Metrics, released: list[str]) -> None:
    """What freeing an incident's resources did: its log line and metric."""
    logger.info("released", extra={"resources": released})
    metrics.add_metric(name="LeasesReleased", unit=MetricUnit.Count, value=len(released))


def record_apply(logger: Logger, metrics: Metrics, result: ApplyResult) -> None:
    """What an apply did: its log line and metrics."""
    applied = sum(s.status == "applied" for s in result.steps)
    logger.info(
        "remediation_applied",
        extra={
            "remediation": {
                "outcome": result.outcome,
                "steps": {str(s.execution_order): s.status for s in result.steps},
                "failed_step": result.failed_step,
                "error": result.error,
            }
        },
    )
    metrics.add_metadata(key="outcome", value=result.outcome)
    metrics.add_metric(name="ActionsApplied", unit=MetricUnit.Count, value=applied)
    metrics.add_metric(name="ActionsFailed", unit=MetricUnit.Count, value=int(result.failed_step is not None))


def record_rollback(logger: Logger, metrics: Metrics, rollback: RollbackResult, reason: str) -> None:
    """What a rollback undid, and why it ran: its log line and metrics."""
    logger.info(
        "remediation_rolled_back",
        extra={
            "rollback": {
                "outcome": rollback.outcome,
                "reason": reason[:500],
                "steps": {str(s.execution_order): s.status for s in rollback.steps},
                "error": rollback.error,
            }
        },
    )
    metrics.add_metadata(key="outcome", value=rollback.outcome)
    metrics.add_metric(
        name="ActionsUndone", unit=MetricUnit.Count, value=sum(s.status == "undone" for s in rollback.steps)
    )
    metrics.add_metric(
        name="UndoFailed", unit=MetricUnit.Count, value=sum(s.status == "undo_failed" for s in rollback.steps)
    )


def record_verification(logger: Logger, metrics: Metrics, result: VerifyResult) -> None:
    """What a verification found: its log line and metrics."""
    logger.info(
        "verification",
        extra={
            "verification": {
                "outcome": result.outcome,
                "checks": [c.model_dump(exclude={"detail"}) for c in result.checks],
                "needs_person": [n.fault_type for n in result.needs_person],
                "summary": result.summary,
            }
        },
    )
    metrics.add_metadata(key="outcome", value=result.outcome)
    metrics.add_metric(name="Verified", unit=MetricUnit.Count, value=int(result.outcome == "VERIFIED"))
    metrics.add_metric(name="NotFixed", unit=MetricUnit.Count, value=int(result.outcome == "NOT_FIXED"))
    metrics.add_metric(name="NeedsPerson", unit=MetricUnit.Count, value=len(result.needs_person))
