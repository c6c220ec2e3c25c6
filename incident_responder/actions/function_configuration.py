"""update_function_configuration: a function's timeout, memory size or ephemeral storage put back to the baseline's.

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
from incident_responder.actions.lookup import ACTIONS_DESCRIPTION, _lookup
from incident_responder.actions.targets import _other_function, _target_reason
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    FaultType,
    ProposedAction,
    RemediationAction,
    UpdateFunctionConfigurationParams,
    proposed,
)


class FunctionConfigRestoreInfo(BaseModel):
    function_name: str
    current_timeout: int | None = None
    baseline_timeout: int | None = None
    current_memory_size: int | None = None
    baseline_memory_size: int | None = None
    current_ephemeral_storage: int | None = Field(default=None, description="/tmp size in MB now")
    baseline_ephemeral_storage: int | None = Field(
        default=None, description="/tmp size in MB the baseline recorded (None: not recorded)"
    )
    changes: dict[str, Any] = Field(
        default_factory=dict, description="UpdateFunctionConfiguration arguments that restore the baseline"
    )
    refused: list[str] = Field(
        default_factory=list, description="differences from the baseline no restore is proposed for, with why"
    )
    baseline_captured_at: str | None = None
    actions: list[ProposedAction] = Field(
        default_factory=list,
        description=ACTIONS_DESCRIPTION + " (timeout, memory and ephemeral storage each for its own fault)",
    )
    error: str | None = None


def get_function_config_restore_info(clients: AwsClients, lambda_name: str) -> FunctionConfigRestoreInfo:
    return _lookup(
        FunctionConfigRestoreInfo,
        clients,
        lambda_name,
        _function_config_restore_info,
        UpdateFunctionConfiguration.sections,
    )


def _function_config_restore_info(
    name: str, current: FunctionConfiguration, baseline: Baseline
) -> FunctionConfigRestoreInfo:
    base = baseline.configuration
    changes: dict[str, Any] = {}
    refused = []
    if current.timeout != base.timeout:
        changes["Timeout"] = base.timeout
    if current.memory_size != base.memory_size:
        changes["MemorySize"] = base.memory_size
    # /tmp: restored only when it is smaller than recorded (a larger /tmp exhausts nothing) and was recorded at all.
    storage_now, storage_before = current.ephemeral_storage, base.ephemeral_storage
    if storage_before is not None and storage_now is not None and storage_now != storage_before:
        if storage_now < storage_before:
            changes["EphemeralStorage"] = {"Size": storage_before}
        else:
            refused.append(
                f"ephemeral storage is {storage_now} MB, more than the baseline's {storage_before} MB: "
                "a larger /tmp exhausts nothing, so it is not shrunk back"
            )
    target = baseline.function_arn or name
    actions = []
    if "Timeout" in changes:
        actions.append(
            proposed(
                fault_type=FaultType.TIMEOUT,
                action_type=ActionType.UPDATE_FUNCTION_CONFIGURATION,
                target_resource=target,
                parameters=UpdateFunctionConfigurationParams(function_name=name, timeout=base.timeout),
                reasoning=f"timeout {current.timeout} s -> baseline {base.timeout} s",
            )
        )
    if "MemorySize" in changes:
        actions.append(
            proposed(
                fault_type=FaultType.MEMORY_EXHAUSTION,
                action_type=ActionType.UPDATE_FUNCTION_CONFIGURATION,
                target_resource=target,
                parameters=UpdateFunctionConfigurationParams(function_name=name, memory_size=base.memory_size),
                reasoning=f"memory {current.memory_size} MB -> baseline {base.memory_size} MB",
            )
        )
    if "EphemeralStorage" in changes:
        actions.append(
            proposed(
                fault_type=FaultType.STORAGE_EXHAUSTION,
                action_type=ActionType.UPDATE_FUNCTION_CONFIGURATION,
                target_resource=target,
                parameters=UpdateFunctionConfigurationParams(function_name=name, ephemeral_storage=storage_before),
                reasoning=f"ephemeral storage (/tmp) {storage_now} MB -> baseline {storage_before} MB",
            )
        )
    return FunctionConfigRestoreInfo(
        function_name=name,
        current_timeout=current.timeout,
        baseline_timeout=base.timeout,
        current_memory_size=current.memory_size,
        baseline_memory_size=base.memory_size,
        current_ephemeral_storage=storage_now,
        baseline_ephemeral_storage=storage_before,
        changes=changes,
        refused=refused,
        baseline_captured_at=baseline.captured_at,
        actions=actions,
    )


# -- the change: capture, apply, undo ----------------------------------------------------------------


class _FunctionConfiguration(_Change):
    # The ledger records EphemeralStorage as its size in MB; the API takes and returns {"Size": MB}.
    FIELDS = (("timeout", "Timeout"), ("memory_size", "MemorySize"), ("ephemeral_storage", "EphemeralStorage"))

    def resources(self, p: UpdateFunctionConfigurationParams) -> list[str]:
        return [f"function:{p.function_name}"]

    def satisfied(self, p: UpdateFunctionConfigurationParams, state: dict[str, Any]) -> bool:
        return all(state.get(api) == getattr(p, field) for field, api in self.FIELDS if getattr(p, field) is not None)

    def capture(self, clients: AwsClients, p: UpdateFunctionConfigurationParams) -> dict[str, Any]:
        config = clients.get("lambda").get_function_configuration(FunctionName=p.function_name)
        config = {**config, "EphemeralStorage": (config.get("EphemeralStorage") or {}).get("Size", 512)}
        # Only what the action changes: a field it leaves alone is not its to put back.
        return {"function_name": p.function_name} | {
            api: config[api] for field, api in self.FIELDS if getattr(p, field) is not None
        }

    def apply(self, clients: AwsClients, p: UpdateFunctionConfigurationParams) -> str:
        changes = {api: getattr(p, field) for field, api in self.FIELDS if getattr(p, field) is not None}
        self._update(clients, p.function_name, changes)
        return f"set {', '.join(f'{k} {v}' for k, v in changes.items())} on {p.function_name}"

    def restore(self, clients: AwsClients, p: UpdateFunctionConfigurationParams, prior: dict[str, Any]) -> None:
        self._update(clients, p.function_name, {api: prior[api] for _, api in self.FIELDS if api in prior})

    @staticmethod
    def _update(clients: AwsClients, function_name: str, changes: dict[str, Any]) -> None:
        lam = clients.get("lambda")
        waiter = {"FunctionName": function_name, "WaiterConfig": {"Delay": 2, "MaxAttempts": 30}}
        # Lambda applies configuration asynchronously and refuses a change while another is pending.
        lam.get_waiter("function_updated").wait(**waiter)
        if "EphemeralStorage" in changes:
            changes = {**changes, "EphemeralStorage": {"Size": changes["EphemeralStorage"]}}
        lam.update_function_configuration(FunctionName=function_name, **changes)
        lam.get_waiter("function_updated").wait(**waiter)


# -- the guardrail ----------------------------------------------------------------------------------


def _check_storage_fault(action: RemediationAction, p: UpdateFunctionConfigurationParams) -> list[str]:
    """Ephemeral storage is restored for storage_exhaustion only, and that fault's action changes nothing else."""
    if p.ephemeral_storage is not None and action.fault_type != FaultType.STORAGE_EXHAUSTION:
        return [f"ephemeral storage restores /tmp, which does not remedy {action.fault_type}"]
    if action.fault_type == FaultType.STORAGE_EXHAUSTION and (
        p.ephemeral_storage is None or p.timeout is not None or p.memory_size is not None
    ):
        return ["storage_exhaustion is remedied by ephemeral storage alone, not by timeout or memory"]
    return []


def _check_configuration(
    p: UpdateFunctionConfigurationParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    reasons = _other_function(p.function_name, current)
    if p.timeout is not None and p.timeout != baseline.timeout:
        reasons.append(f"timeout {p.timeout} s must equal the baseline {baseline.timeout} s")
    if p.memory_size is not None and p.memory_size != baseline.memory_size:
        reasons.append(f"memory {p.memory_size} MB must equal the baseline {baseline.memory_size} MB")
    if p.ephemeral_storage is not None:
        before, now = baseline.ephemeral_storage, current.ephemeral_storage
        if before is None:
            reasons.append("the baseline did not record ephemeral storage: there is no value to restore")
        elif p.ephemeral_storage != before:
            reasons.append(f"ephemeral storage {p.ephemeral_storage} MB must equal the baseline {before} MB")
        elif now is not None and now > before:
            reasons.append(
                f"ephemeral storage is {now} MB, more than the baseline's {before} MB: shrinking /tmp restores "
                "no exhausted storage"
            )
    unchanged = (
        (p.timeout is None or p.timeout == current.timeout)
        and (p.memory_size is None or p.memory_size == current.memory_size)
        and (p.ephemeral_storage is None or p.ephemeral_storage == current.ephemeral_storage)
    )
    if not reasons and unchanged:
        reasons.append("timeout, memory and ephemeral storage already equal the baseline: nothing to restore")
    return reasons


# -- the action ------------------------------------------------------------------------------------


class UpdateFunctionConfiguration(Action):
    """A function's timeout, memory size or ephemeral storage put back to the baseline's. Low risk: the function's
    own limits, back to their recorded values."""

    action_type = ActionType.UPDATE_FUNCTION_CONFIGURATION
    risk = "low"
    iam_writes = frozenset({"lambda:UpdateFunctionConfiguration"})
    # The lookup's field that shows a fault already at the baseline (the offline critic's no-op check).
    no_drift = {
        FaultType.TIMEOUT: ("current_timeout", "the timeout already equals the baseline"),
        FaultType.MEMORY_EXHAUSTION: ("current_memory_size", "the memory size already equals the baseline"),
        FaultType.STORAGE_EXHAUSTION: (
            "current_ephemeral_storage",
            "the ephemeral storage already equals the baseline",
        ),
    }
    lookup_tool = "get_function_config_restore_info"
    sections = ()
    lookup_model = FunctionConfigRestoreInfo
    lookup_description = (
        "Timeout, memory size and ephemeral storage (/tmp) against the baseline, and the UpdateFunctionConfiguration "
        "changes that restore them (ephemeral storage only when it is below the baseline's)."
    )
    change = _FunctionConfiguration()

    def lookup(self, clients, lambda_name):
        return get_function_config_restore_info(clients, lambda_name)

    def guardrail(self, action, p, current, baseline, clients):
        return (
            _target_reason(action, "the function", "function", [p.function_name])
            + _check_storage_fault(action, p)
            + _check_configuration(p, current, baseline)
        )

    def drift_paths(self, p, current):
        fields = (("timeout", p.timeout), ("memory_size", p.memory_size), ("ephemeral_storage", p.ephemeral_storage))
        return [f for f, v in fields if v is not None]

    def verify(self, p, current, baseline):
        found = Restoration(prefixes=self.drift_paths(p, current))
        if p.ephemeral_storage is not None and current.ephemeral_storage != baseline.ephemeral_storage:
            # Said here too: a baseline taken before ephemeral storage was recorded shows no drift for it.
            found.problems.append(
                f"ephemeral_storage: baseline {baseline.ephemeral_storage}, now {current.ephemeral_storage}"
            )
            found.prefixes.remove("ephemeral_storage")
        return found
