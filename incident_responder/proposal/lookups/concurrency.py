"""PROPOSING and REVIEWING: the function's reserved concurrency against its baseline."""

from __future__ import annotations

from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline
from incident_responder.account.state import FunctionConfiguration
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    FaultType,
    ProposedAction,
    ProposedUpdateConcurrency,
    UpdateConcurrencyParams,
)
from incident_responder.proposal.lookups.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _lookup


class ConcurrencyRestoreInfo(BaseModel):
    function_name: str
    current_reserved: int | None = None
    baseline_reserved: int | None = None
    action: str = Field(
        default="none", description="put (set the baseline value), delete (baseline had no reservation) or none"
    )
    baseline_captured_at: str | None = None
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def get_concurrency_restore_info(clients: AwsClients, lambda_name: str) -> ConcurrencyRestoreInfo:
    return _lookup(ConcurrencyRestoreInfo, clients, lambda_name, _concurrency_restore_info)


def _concurrency_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> ConcurrencyRestoreInfo:
    now, before = current.reserved_concurrency, baseline.configuration.reserved_concurrency
    action = "none" if now == before else ("delete" if before is None else "put")
    actions = []
    if action != "none":
        actions.append(
            ProposedUpdateConcurrency(
                fault_type=FaultType.THROTTLING,
                action_type=ActionType.UPDATE_CONCURRENCY,
                target_resource=baseline.function_arn or name,
                parameters=UpdateConcurrencyParams(function_name=name, reserved_concurrent_executions=before),
                reasoning=f"reserved concurrency {now} -> baseline "
                + ("none (delete the reservation)" if before is None else str(before)),
            )
        )
    return ConcurrencyRestoreInfo(
        function_name=name,
        current_reserved=now,
        baseline_reserved=before,
        action=action,
        baseline_captured_at=baseline.captured_at,
        actions=actions,
    )
