"""enable_kms_key: the KMS key encrypting the function's environment enabled again.

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
from incident_responder.actions.targets import _target_reason
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    EnableKmsKeyParams,
    FaultType,
    ProposedAction,
    proposed,
)


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
    return _lookup(KmsRestoreInfo, clients, lambda_name, _kms_restore_info, EnableKmsKey.sections)


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
                proposed(
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


# -- the change: capture, apply, undo ----------------------------------------------------------------


def _key_id(key_arn: str) -> str:
    # KMS takes the id or the ARN for Enable/DisableKey; some emulators only the id.
    return key_arn.rsplit("/", 1)[-1]


class _KmsKey(_Change):
    def resources(self, p: EnableKmsKeyParams) -> list[str]:
        return [f"key:{p.key_arn}"]

    def satisfied(self, p: EnableKmsKeyParams, state: dict[str, Any]) -> bool:
        return bool(state["key_state"] == "Enabled")

    def capture(self, clients: AwsClients, p: EnableKmsKeyParams) -> dict[str, Any]:
        metadata = clients.get("kms").describe_key(KeyId=_key_id(p.key_arn))["KeyMetadata"]
        return {"key_arn": p.key_arn, "key_state": metadata["KeyState"]}

    def apply(self, clients: AwsClients, p: EnableKmsKeyParams) -> str:
        if self.capture(clients, p)["key_state"] == "Enabled":
            return f"key {p.key_arn} is already enabled"
        clients.get("kms").enable_key(KeyId=_key_id(p.key_arn))
        return f"enabled key {p.key_arn}"

    def restore(self, clients: AwsClients, p: EnableKmsKeyParams, prior: dict[str, Any]) -> None:
        state = self.capture(clients, p)["key_state"]
        if state == prior["key_state"]:
            return
        # Only the two states EnableKey moves between; any other is left for the read-back to report.
        if prior["key_state"] == "Disabled":
            clients.get("kms").disable_key(KeyId=_key_id(p.key_arn))
        elif prior["key_state"] == "Enabled":
            clients.get("kms").enable_key(KeyId=_key_id(p.key_arn))


# -- the guardrail ----------------------------------------------------------------------------------


def _check_kms(p: EnableKmsKeyParams, current: FunctionConfiguration, baseline: FunctionConfiguration) -> list[str]:
    now = {k.key_arn: k for k in current.kms_keys}
    recorded = {k.key_arn: k for k in baseline.kms_keys}
    if p.key_arn not in now:
        names = ", ".join(sorted(now)) or "none: it uses an AWS-managed key"
        return [f"key {p.key_arn} is not the key the function's configuration names ({names})"]
    if p.key_arn not in recorded:
        return [f"key {p.key_arn} was not recorded in the baseline: only a key recorded Enabled there is enabled"]
    if recorded[p.key_arn].key_state != "Enabled":
        return [f"key {p.key_arn} was {recorded[p.key_arn].key_state} in the baseline, not Enabled"]
    state = now[p.key_arn].key_state
    if state == "Enabled":
        return [f"key {p.key_arn} is already Enabled: nothing to restore"]
    if state != "Disabled":
        return [f"key {p.key_arn} is {state}: EnableKey restores only a Disabled key"]
    return []


# -- the action ------------------------------------------------------------------------------------


class EnableKmsKey(Action):
    """The KMS key encrypting the function's environment enabled again. High risk, and always a person: someone may
    have disabled it on purpose (a suspected compromise)."""

    action_type = ActionType.ENABLE_KMS_KEY
    risk = "high"
    approval = "person"
    person_reason = "enabling a KMS key needs a person: it may have been disabled on purpose"
    iam_writes = frozenset({"kms:EnableKey", "kms:DisableKey"})
    # The lookup's field that shows a fault already at the baseline (the offline critic's no-op check).
    no_drift = {
        FaultType.KMS_KEY_DISABLED: ("drifted", "the key is already in its baseline state"),
    }
    lookup_tool = "get_kms_restore_info"
    sections = ("kms_keys", "role")
    lookup_model = KmsRestoreInfo
    lookup_description = (
        "The state of the KMS key encrypting the function's environment against the baseline, and EnableKey when "
        "the baseline recorded it Enabled and it is Disabled now."
    )
    change = _KmsKey()

    def lookup(self, clients, lambda_name):
        return get_kms_restore_info(clients, lambda_name)

    def guardrail(self, action, p, current, baseline, clients):
        return _target_reason(action, "the key", "kms", [p.key_arn]) + _check_kms(p, current, baseline)

    def drift_paths(self, p, current):
        return [f"kms_keys.{p.key_arn}"]

    def verify(self, p, current, baseline):
        return Restoration(prefixes=[f"kms_keys.{p.key_arn}"])
