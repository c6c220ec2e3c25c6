"""update_concurrency: a function's reserved concurrency put back to the baseline's.

Everything about it: its restore lookup (the remediation MCP tool), its change (capture, apply, undo), its
guardrail, where its difference shows and how verification judges it (:mod:`incident_responder.actions.base`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline
from incident_responder.account.state import FunctionConfiguration, read_reserved_concurrency
from incident_responder.actions.base import Action, Restoration
from incident_responder.actions.change import _Change
from incident_responder.actions.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _lookup
from incident_responder.actions.targets import _other_function, _target_reason
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    FaultType,
    ProposedAction,
    UpdateConcurrencyParams,
    proposed,
)


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
    return _lookup(ConcurrencyRestoreInfo, clients, lambda_name, _concurrency_restore_info, UpdateConcurrency.sections)


def _concurrency_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> ConcurrencyRestoreInfo:
    now, before = current.reserved_concurrency, baseline.configuration.reserved_concurrency
    action = "none" if now == before else ("delete" if before is None else "put")
    actions = []
    if action != "none":
        actions.append(
            proposed(
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


# -- the change: capture, apply, undo ----------------------------------------------------------------


class _Concurrency(_Change):
    def resources(self, p: UpdateConcurrencyParams) -> list[str]:
        return [f"function:{p.function_name}"]

    def satisfied(self, p: UpdateConcurrencyParams, state: dict[str, Any]) -> bool:
        return state["reserved_concurrent_executions"] == p.reserved_concurrent_executions

    def capture(self, clients: AwsClients, p: UpdateConcurrencyParams) -> dict[str, Any]:
        return {
            "function_name": p.function_name,
            "reserved_concurrent_executions": read_reserved_concurrency(clients, p.function_name),
        }

    def apply(self, clients: AwsClients, p: UpdateConcurrencyParams) -> str:
        return self._set(clients, p.function_name, p.reserved_concurrent_executions)

    def restore(self, clients: AwsClients, p: UpdateConcurrencyParams, prior: dict[str, Any]) -> None:
        self._set(clients, p.function_name, prior["reserved_concurrent_executions"])

    @staticmethod
    def _set(clients: AwsClients, function_name: str, value: int | None) -> str:
        lam = clients.get("lambda")
        if value is None:
            lam.delete_function_concurrency(FunctionName=function_name)
            return f"removed the reserved concurrency of {function_name}"
        lam.put_function_concurrency(FunctionName=function_name, ReservedConcurrentExecutions=value)
        return f"set the reserved concurrency of {function_name} to {value}"


# -- the guardrail ----------------------------------------------------------------------------------


def _check_concurrency(
    p: UpdateConcurrencyParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    reasons = _other_function(p.function_name, current)
    before = baseline.reserved_concurrency
    if p.reserved_concurrent_executions != before:
        shown = "no reservation" if before is None else before
        reasons.append(f"reserved concurrency must equal the baseline ({shown}): anything else is not a restore")
    elif current.reserved_concurrency == before:
        reasons.append("reserved concurrency already equals the baseline: nothing to restore")
    return reasons


# -- the action ------------------------------------------------------------------------------------


class UpdateConcurrency(Action):
    """A function's reserved concurrency put back to the baseline's (or the reservation removed). Low risk: the
    function's own limit, back to its recorded value."""

    action_type = ActionType.UPDATE_CONCURRENCY
    risk = "low"
    iam_writes = frozenset({"lambda:PutFunctionConcurrency", "lambda:DeleteFunctionConcurrency"})
    # The lookup's field that shows a fault already at the baseline (the offline critic's no-op check).
    no_drift = {
        FaultType.THROTTLING: ("action", "the reserved concurrency already equals the baseline"),
    }
    lookup_tool = "get_concurrency_restore_info"
    sections = ("reserved_concurrency",)
    lookup_model = ConcurrencyRestoreInfo
    lookup_description = (
        "Current and baseline reserved concurrency, and whether to put the baseline value or delete the reservation."
    )
    change = _Concurrency()

    def lookup(self, clients, lambda_name):
        return get_concurrency_restore_info(clients, lambda_name)

    def guardrail(self, action, p, current, baseline, clients):
        return _target_reason(action, "the function", "function", [p.function_name]) + _check_concurrency(
            p, current, baseline
        )

    def drift_paths(self, p, current):
        return ["reserved_concurrency"]

    def verify(self, p, current, baseline):
        return Restoration(prefixes=["reserved_concurrency"])
