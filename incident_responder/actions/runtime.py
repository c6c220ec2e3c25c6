"""restore_runtime: a function's runtime setting put back to the baseline's (catalogue entry invalid-entrypoint: an
OS-only runtime set on a package that has no bootstrap).

Everything about it: its restore lookup (the remediation MCP tool), its change (capture, apply, undo), its
guardrail, where its difference shows and how verification judges it (:mod:`incident_responder.actions.base`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline
from incident_responder.account.state import FunctionConfiguration
from incident_responder.actions.base import Action, Restoration
from incident_responder.actions.change import _Change
from incident_responder.actions.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _lookup
from incident_responder.actions.targets import _other_function, _target_reason
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import ActionType, FaultType, ProposedAction, proposed
from incident_responder.core.contracts.parameters import RestoreRuntimeParams


class RuntimeRestoreInfo(BaseModel):
    function_name: str
    current_runtime: str | None = None
    baseline_runtime: str | None = Field(
        default=None, description="None: the baseline did not record it (or a container image)"
    )
    baseline_captured_at: str | None = None
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def get_runtime_restore_info(clients: AwsClients, lambda_name: str) -> RuntimeRestoreInfo:
    return _lookup(RuntimeRestoreInfo, clients, lambda_name, _runtime_restore_info, RestoreRuntime.sections)


def _runtime_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> RuntimeRestoreInfo:
    now, before = current.runtime, baseline.configuration.runtime
    actions = []
    if before is not None and now != before:
        actions.append(
            proposed(
                fault_type=FaultType.RUNTIME_MISCONFIGURED,
                action_type=ActionType.RESTORE_RUNTIME,
                target_resource=baseline.function_arn or name,
                parameters=RestoreRuntimeParams(function_name=name, runtime=before),
                reasoning=f"runtime {now} -> baseline {before}",
            )
        )
    return RuntimeRestoreInfo(
        function_name=name,
        current_runtime=now,
        baseline_runtime=before,
        baseline_captured_at=baseline.captured_at,
        actions=actions,
    )


# -- the change: capture, apply, undo ----------------------------------------------------------------


class _Runtime(_Change):
    def resources(self, p: RestoreRuntimeParams) -> list[str]:
        return [f"function:{p.function_name}"]

    def satisfied(self, p: RestoreRuntimeParams, state: dict[str, Any]) -> bool:
        return state["runtime"] == p.runtime

    def capture(self, clients: AwsClients, p: RestoreRuntimeParams) -> dict[str, Any]:
        config = clients.get("lambda").get_function_configuration(FunctionName=p.function_name)
        return {"function_name": p.function_name, "runtime": config.get("Runtime")}

    def apply(self, clients: AwsClients, p: RestoreRuntimeParams) -> str:
        self._set(clients, p.function_name, p.runtime)
        return f"set the runtime of {p.function_name} to {p.runtime}"

    def restore(self, clients: AwsClients, p: RestoreRuntimeParams, prior: dict[str, Any]) -> None:
        self._set(clients, p.function_name, prior["runtime"])

    @staticmethod
    def _set(clients: AwsClients, function_name: str, runtime: str) -> None:
        lam = clients.get("lambda")
        waiter = {"FunctionName": function_name, "WaiterConfig": {"Delay": 2, "MaxAttempts": 30}}
        # Lambda applies configuration asynchronously and refuses a change while another is pending.
        lam.get_waiter("function_updated").wait(**waiter)
        lam.update_function_configuration(FunctionName=function_name, Runtime=runtime)
        lam.get_waiter("function_updated").wait(**waiter)


# -- the guardrail ----------------------------------------------------------------------------------


def _check_runtime(
    p: RestoreRuntimeParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    reasons = _other_function(p.function_name, current)
    if baseline.runtime is None:
        reasons.append("the baseline did not record the runtime: there is no value to restore")
    elif p.runtime != baseline.runtime:
        reasons.append(f"runtime {p.runtime} must equal the baseline's {baseline.runtime}")
    elif current.runtime == baseline.runtime:
        reasons.append("the runtime already equals the baseline: nothing to restore")
    return reasons


# -- the action ------------------------------------------------------------------------------------


class RestoreRuntime(Action):
    """A function's runtime setting put back to the baseline's. Low risk: the runtime the deployed code was recorded
    working with; the code itself is not changed."""

    action_type = ActionType.RESTORE_RUNTIME
    risk = "low"
    iam_writes = frozenset({"lambda:UpdateFunctionConfiguration"})
    # The lookup's field that shows a fault already at the baseline (the offline critic's no-op check).
    no_drift = {
        FaultType.RUNTIME_MISCONFIGURED: ("current_runtime", "the runtime already equals the baseline"),
    }
    lookup_tool = "get_runtime_restore_info"
    sections = ()
    lookup_model = RuntimeRestoreInfo
    lookup_description = "The function's runtime setting against the baseline's, and the restore that puts it back."
    change = _Runtime()

    def lookup(self, clients, lambda_name):
        return get_runtime_restore_info(clients, lambda_name)

    def guardrail(self, action, p, current, baseline, clients):
        return _target_reason(action, "the function", "function", [p.function_name]) + _check_runtime(
            p, current, baseline
        )

    def drift_paths(self, p, current):
        return ["runtime"]

    def verify(self, p, current, baseline):
        return Restoration(prefixes=["runtime"])
