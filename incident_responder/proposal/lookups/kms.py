"""PROPOSING and REVIEWING: the state of the KMS key encrypting the function's environment against its baseline."""

from __future__ import annotations

from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline
from incident_responder.account.state import FunctionConfiguration
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    EnableKmsKeyParams,
    FaultType,
    ProposedAction,
    ProposedEnableKmsKey,
)
from incident_responder.proposal.lookups.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _lookup


class KeyRestore(BaseModel):
    key_arn: str
    current_state: str | None = Field(
        description="KeyState now (None: the function's configuration no longer names it)"
    )
    baseline_state: str | None = Field(description="KeyState recorded at onboarding (None: not recorded)")
    refused: str | None = Field(default=None, description="why EnableKey is not proposed for this key, when it is not")


class KmsRestoreInfo(BaseModel):
    function_name: str
    drifted: bool = False
    baseline_captured_at: str | None = None
    keys: list[KeyRestore] = Field(default_factory=list, description="the function's keys whose state differs")
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def get_kms_restore_info(clients: AwsClients, lambda_name: str) -> KmsRestoreInfo:
    return _lookup(KmsRestoreInfo, clients, lambda_name, _kms_restore_info)


def _kms_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> KmsRestoreInfo:
    before = {k.key_arn: k for k in baseline.configuration.kms_keys}
    now = {k.key_arn: k for k in current.kms_keys}
    keys, actions = [], []
    for arn in sorted(set(before) | set(now)):
        base, key = before.get(arn), now.get(arn)
        if base is not None and key is not None and base.key_state == key.key_state:
            continue
        restore = KeyRestore(
            key_arn=arn, current_state=key.key_state if key else None, baseline_state=base.key_state if base else None
        )
        keys.append(restore)
        if key is None:
            restore.refused = "the function's configuration no longer names this key: not a key state to restore"
        elif base is None:
            restore.refused = "the baseline did not record this key: only keys recorded at onboarding are enabled"
        elif base.key_state != "Enabled":
            restore.refused = f"the baseline recorded it {base.key_state}, not Enabled"
        elif key.key_state == "PendingDeletion":
            restore.refused = "it is scheduled for deletion: cancelling that (CancelKeyDeletion) is a person's decision"
        elif key.key_state != "Disabled":
            restore.refused = f"it is {key.key_state}: EnableKey restores only a Disabled key"
        else:
            actions.append(
                ProposedEnableKmsKey(
                    fault_type=FaultType.KMS_KEY_DISABLED,
                    action_type=ActionType.ENABLE_KMS_KEY,
                    target_resource=arn,
                    parameters=EnableKmsKeyParams(key_arn=arn),
                    reasoning="the key encrypting the function's environment is Disabled; the baseline recorded "
                    "it Enabled (it may have been disabled on purpose: a person should confirm)",
                )
            )
    return KmsRestoreInfo(
        function_name=name,
        drifted=bool(keys),
        baseline_captured_at=baseline.captured_at,
        keys=keys,
        actions=actions,
    )
