"""kms_key_pending_deletion: the customer-managed key encrypting the function's environment is scheduled for
deletion (catalogue entry kms-key-pending-deletion)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chaos.errors import ChaosError
from chaos.kinds.base import ORDERS_API, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


class KmsKeyPendingDeletion(KindParameters):
    """The key is scheduled for deletion: PendingDeletion at once, deleted only after the waiting period."""

    kind: Literal["kms_key_pending_deletion"]
    # AWS KMS takes 7 to 30 days; the lab never lets the period run out (restore cancels the deletion).
    days: int = Field(default=7, ge=7, le=30)


class KmsKeyPendingDeletionKind(ChaosKind[KmsKeyPendingDeletion]):
    """Schedule the customer-managed key that encrypts the function's environment for deletion."""

    parameters = KmsKeyPendingDeletion
    fault_type = FaultType.KMS_KEY_DISABLED
    workloads = frozenset({ORDERS_API})
    refusal = "no customer-managed key"
    slots = ("kmsdeletion",)  # kmsdeletion.<key id>: the key's state before the deletion was scheduled
    help = "schedule the customer-managed key encrypting the function's environment for deletion"
    defaults = {"days": 7}
    argument_help = {"days": "the waiting period, 7 to 30 days (default: 7, the shortest AWS KMS allows)"}
    example = {"days": 30}

    def inject(self, target: FaultTarget, params: KmsKeyPendingDeletion) -> list[str]:
        arn = target.config().get("KMSKeyArn")
        if not arn:
            raise ChaosError(
                f"{target.function_name}'s environment is encrypted with an AWS managed key: "
                "there is no customer-managed key to schedule for deletion"
            )
        kms = target.clients.get("kms")
        metadata = kms.describe_key(KeyId=arn)["KeyMetadata"]
        if metadata.get("KeyManager") == "AWS":
            raise ChaosError(f"key {arn} is AWS managed: it cannot be scheduled for deletion")
        key_id = metadata["KeyId"]
        target.store.remember(f"kmsdeletion.{key_id}", metadata.get("KeyState"))
        target.store.record_fault({"kind": "kms_key_pending_deletion", "days": params.days})
        if metadata.get("KeyState") == "PendingDeletion":
            return [f"KMS key {key_id} is already scheduled for deletion"]
        kms.schedule_key_deletion(KeyId=key_id, PendingWindowInDays=params.days)
        return [
            f"scheduled KMS key {key_id} for deletion in {params.days} days (it encrypts the environment of "
            f"{target.function_name}; PendingDeletion now)"
        ]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        key_id = slot.removeprefix("kmsdeletion.")
        kms = target.clients.get("kms")
        state = kms.describe_key(KeyId=key_id)["KeyMetadata"].get("KeyState")
        if state == "PendingDeletion" and original != "PendingDeletion":
            kms.cancel_key_deletion(KeyId=key_id)  # AWS KMS leaves the key Disabled
            state = "Disabled"
        if original == "Enabled" and state == "Disabled":
            kms.enable_key(KeyId=key_id)
            return f"KMS key {key_id}: deletion cancelled, key enabled again"
        return f"KMS key {key_id} is {state} (was {original})"
