"""secret_scheduled_for_deletion: the Secrets Manager secrets the function's environment names are scheduled for
deletion."""

from __future__ import annotations

from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import ORDERS_API, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.account.environment import read_secrets
from incident_responder.core.contracts import FaultType


class SecretScheduledForDeletion(KindParameters):
    """The Secrets Manager secrets the function's environment names are scheduled for deletion."""

    kind: Literal["secret_scheduled_for_deletion"]


class SecretScheduledForDeletionKind(ChaosKind[SecretScheduledForDeletion]):
    """Schedule every Secrets Manager secret the function's environment names for deletion (7 days)."""

    parameters = SecretScheduledForDeletion
    fault_type = FaultType.DEPENDENCY_MISSING
    workloads = frozenset({ORDERS_API})
    refusal = "names no Secrets Manager secret"
    slots = ("secret",)  # secret.<arn>: its deletion date (None: not scheduled)
    help = "schedule the secrets its environment names for deletion"

    def inject(self, target: FaultTarget, params: SecretScheduledForDeletion) -> list[str]:
        secrets = [s for s in read_secrets(target.clients, target.variables()) if s.exists]
        if not secrets:
            raise ChaosError(f"{target.function_name}'s environment names no Secrets Manager secret by ARN")
        sm = target.clients.get("secretsmanager")
        changes = []
        for secret in secrets:
            target.store.remember(f"secret.{secret.secret_arn}", secret.deleted_date)
            if secret.deleted_date:
                changes.append(f"secret {secret.secret_arn} is already scheduled for deletion")
                continue
            sm.delete_secret(SecretId=secret.secret_arn, RecoveryWindowInDays=7)
            changes.append(f"secret {secret.secret_arn} ({secret.variable}) scheduled for deletion in 7 days")
        target.store.record_fault({"kind": "secret_scheduled_for_deletion"})
        return changes

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        arn = slot.removeprefix("secret.")
        current = next(iter(read_secrets(target.clients, {"_": arn})), None)
        if current is not None and current.deleted_date and not original:
            target.clients.get("secretsmanager").restore_secret(SecretId=arn)
            return f"secret {arn}: deletion cancelled"
        return f"secret {arn}: nothing to cancel"
