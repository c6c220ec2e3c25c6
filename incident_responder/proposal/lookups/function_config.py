"""PROPOSING and REVIEWING: the function's timeout, memory and ephemeral storage against its baseline."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline
from incident_responder.account.state import FunctionConfiguration
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    FaultType,
    ProposedAction,
    ProposedUpdateFunctionConfiguration,
    UpdateFunctionConfigurationParams,
)
from incident_responder.proposal.lookups.lookup import ACTIONS_DESCRIPTION, _lookup


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
    return _lookup(FunctionConfigRestoreInfo, clients, lambda_name, _function_config_restore_info)


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
            ProposedUpdateFunctionConfiguration(
                fault_type=FaultType.TIMEOUT,
                action_type=ActionType.UPDATE_FUNCTION_CONFIGURATION,
                target_resource=target,
                parameters=UpdateFunctionConfigurationParams(function_name=name, timeout=base.timeout),
                reasoning=f"timeout {current.timeout} s -> baseline {base.timeout} s",
            )
        )
    if "MemorySize" in changes:
        actions.append(
            ProposedUpdateFunctionConfiguration(
                fault_type=FaultType.MEMORY_EXHAUSTION,
                action_type=ActionType.UPDATE_FUNCTION_CONFIGURATION,
                target_resource=target,
                parameters=UpdateFunctionConfigurationParams(function_name=name, memory_size=base.memory_size),
                reasoning=f"memory {current.memory_size} MB -> baseline {base.memory_size} MB",
            )
        )
    if "EphemeralStorage" in changes:
        actions.append(
            ProposedUpdateFunctionConfiguration(
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
