"""INVESTIGATING to REMEDIATING: the fault types, the action types, which action remedies which fault, in what order."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

# What an action could break if it were wrong (each action type's risk: incident_responder.actions).
RiskLevel = Literal["low", "medium", "high"]


class FaultType(StrEnum):
    PERMISSION_LOSS = "permission_loss"
    THROTTLING = "throttling"
    NETWORK_BLOCK = "network_block"
    TIMEOUT = "timeout"
    MEMORY_EXHAUSTION = "memory_exhaustion"
    APPLICATION_ERROR = "application_error"
    DEPLOYMENT_REGRESSION = "deployment_regression"
    KMS_KEY_DISABLED = "kms_key_disabled"
    EVENT_SOURCE_DISABLED = "event_source_disabled"
    DEPENDENCY_THROTTLING = "dependency_throttling"
    # From AWS's failure catalogue (docs/failure-catalogue.md).
    CONFIGURATION_DRIFT = "configuration_drift"
    DEPENDENCY_MISSING = "dependency_missing"
    EVENT_SOURCE_MISCONFIGURED = "event_source_misconfigured"
    STORAGE_EXHAUSTION = "storage_exhaustion"
    KMS_ACCESS_DENIED = "kms_access_denied"
    ACCOUNT_CONCURRENCY_EXHAUSTED = "account_concurrency_exhausted"
    RECURSIVE_LOOP = "recursive_loop"
    UNKNOWN = "unknown"


class ActionType(StrEnum):
    RESTORE_IAM_POLICY = "restore_iam_policy"
    UPDATE_CONCURRENCY = "update_concurrency"
    RESTORE_NETWORK_EGRESS = "restore_network_egress"
    UPDATE_FUNCTION_CONFIGURATION = "update_function_configuration"
    ROLLBACK_ALIAS = "rollback_alias"
    ENABLE_KMS_KEY = "enable_kms_key"
    ENABLE_EVENT_SOURCE_MAPPING = "enable_event_source_mapping"
    RESTORE_SECRET = "restore_secret"
    RESTORE_QUEUE_ATTRIBUTES = "restore_queue_attributes"


# -- remediation ----------------------------------------------------------------------------------
# Order in which faults are fixed: access first (the role, then the key that decrypts its environment;
# nothing works without them), then capacity and delivery, network, the code that runs, and finally
# the function's own limits.
FAULT_PRIORITY = [
    FaultType.PERMISSION_LOSS,
    FaultType.KMS_KEY_DISABLED,
    FaultType.DEPENDENCY_MISSING,
    FaultType.THROTTLING,
    FaultType.EVENT_SOURCE_DISABLED,
    FaultType.EVENT_SOURCE_MISCONFIGURED,
    FaultType.NETWORK_BLOCK,
    FaultType.DEPLOYMENT_REGRESSION,
    FaultType.TIMEOUT,
    FaultType.MEMORY_EXHAUSTION,
    FaultType.STORAGE_EXHAUSTION,
]
ACTION_FOR_FAULT = {
    FaultType.PERMISSION_LOSS: ActionType.RESTORE_IAM_POLICY,
    FaultType.KMS_KEY_DISABLED: ActionType.ENABLE_KMS_KEY,
    FaultType.THROTTLING: ActionType.UPDATE_CONCURRENCY,
    FaultType.EVENT_SOURCE_DISABLED: ActionType.ENABLE_EVENT_SOURCE_MAPPING,
    FaultType.NETWORK_BLOCK: ActionType.RESTORE_NETWORK_EGRESS,
    FaultType.DEPLOYMENT_REGRESSION: ActionType.ROLLBACK_ALIAS,
    FaultType.TIMEOUT: ActionType.UPDATE_FUNCTION_CONFIGURATION,
    FaultType.MEMORY_EXHAUSTION: ActionType.UPDATE_FUNCTION_CONFIGURATION,
    FaultType.DEPENDENCY_MISSING: ActionType.RESTORE_SECRET,
    FaultType.EVENT_SOURCE_MISCONFIGURED: ActionType.RESTORE_QUEUE_ATTRIBUTES,
    FaultType.STORAGE_EXHAUSTION: ActionType.UPDATE_FUNCTION_CONFIGURATION,
}
# Faults no action of the responder can fix: the proposal names them for a person. A removed environment
# variable's value is not in the baseline (names and digests only); a key policy, another function's load,
# and code that writes to its own trigger are a person's changes.
UNRESOLVABLE_FAULTS = {
    FaultType.APPLICATION_ERROR,
    FaultType.DEPENDENCY_THROTTLING,
    FaultType.CONFIGURATION_DRIFT,
    FaultType.KMS_ACCESS_DENIED,
    FaultType.ACCOUNT_CONCURRENCY_EXHAUSTED,
    FaultType.RECURSIVE_LOOP,
    FaultType.UNKNOWN,
}
