"""PROPOSING and REVIEWING: the secrets the environment names (a dependency scheduled for deletion)."""

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
    ProposedRestoreSecret,
    RestoreSecretParams,
)
from incident_responder.proposal.lookups.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _lookup


class SecretRestore(BaseModel):
    secret_arn: str
    variable: str = Field(description="the environment variable whose value names the secret")
    current_state: str = Field(
        description="scheduled_for_deletion, deleted (gone for good), not_named (the configuration no longer names "
        "it) or available"
    )
    deleted_date: str | None = Field(default=None, description="when Secrets Manager deletes it, while scheduled")
    baseline_state: str = Field(description="as the baseline recorded it: available, scheduled_for_deletion or deleted")
    refused: str | None = Field(default=None, description="why RestoreSecret is not proposed, when it is not")


class SecretRestoreInfo(BaseModel):
    function_name: str
    drifted: bool = False
    baseline_captured_at: str | None = None
    secrets: list[SecretRestore] = Field(
        default_factory=list, description="the secrets the function's environment names whose state differs"
    )
    not_in_baseline: list[str] = Field(
        default_factory=list, description="secrets the environment names that the baseline lacks (left alone)"
    )
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def _secret_state(secret: Any) -> str:
    if secret is None:
        return "not_named"
    if not secret.exists:
        return "deleted"
    return "scheduled_for_deletion" if secret.deleted_date else "available"


def get_secret_restore_info(clients: AwsClients, lambda_name: str) -> SecretRestoreInfo:
    return _lookup(SecretRestoreInfo, clients, lambda_name, _secret_restore_info)


def _secret_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> SecretRestoreInfo:
    now = {s.secret_arn: s for s in current.secrets}
    restores, actions = [], []
    for base in baseline.configuration.secrets:
        secret = now.get(base.secret_arn)
        state, before = _secret_state(secret), _secret_state(base)
        if state == before:
            continue
        restore = SecretRestore(
            secret_arn=base.secret_arn,
            variable=base.variable,
            current_state=state,
            deleted_date=secret.deleted_date if secret else None,
            baseline_state=before,
        )
        restores.append(restore)
        if before != "available":
            restore.refused = (
                f"the baseline recorded it {before.replace('_', ' ')}: only a secret available then is restored"
            )
        elif state == "not_named":
            restore.refused = "the function's environment no longer names it: not a secret of this function to restore"
        elif state == "deleted":
            restore.refused = (
                "it no longer exists (deleted for good once its recovery window ended): RestoreSecret cannot bring it "
                "back; a person re-creates it and its value"
            )
        elif state == "scheduled_for_deletion":
            actions.append(
                ProposedRestoreSecret(
                    fault_type=FaultType.DEPENDENCY_MISSING,
                    action_type=ActionType.RESTORE_SECRET,
                    target_resource=base.secret_arn,
                    parameters=RestoreSecretParams(secret_arn=base.secret_arn),
                    reasoning=f"the secret {base.variable} names is scheduled for deletion (on {restore.deleted_date}); "
                    "the baseline recorded it available (its deletion may have been scheduled on purpose: a person "
                    "should confirm)",
                )
            )
    return SecretRestoreInfo(
        function_name=name,
        drifted=bool(restores),
        baseline_captured_at=baseline.captured_at,
        secrets=restores,
        not_in_baseline=sorted(set(now) - {s.secret_arn for s in baseline.configuration.secrets}),
        actions=actions,
    )
