"""kms_disable: the customer-managed key encrypting the function's environment is disabled."""

from __future__ import annotations

from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import ORDERS_API, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


class KmsDisable(KindParameters):
    """The customer-managed key encrypting the function's environment is disabled."""

    kind: Literal["kms_disable"]


class KmsDisableKind(ChaosKind[KmsDisable]):
    """Disable the customer-managed key that encrypts the function's environment."""

    parameters = KmsDisable
    fault_type = FaultType.KMS_KEY_DISABLED
    workloads = frozenset({ORDERS_API})
    refusal = "no customer-managed key"
    slots = ("kms",)  # kms.<key id>: the key's state
    help = "disable the customer-managed key encrypting the function's environment"

    def inject(self, target: FaultTarget, params: KmsDisable) -> list[str]:
        arn = target.config().get("KMSKeyArn")
        if not arn:
            raise ChaosError(
                f"{target.function_name}'s environment is encrypted with an AWS managed key: "
                "there is no customer-managed key to disable"
            )
        kms = target.clients.get("kms")
        metadata = kms.describe_key(KeyId=arn)["KeyMetadata"]
        if metadata.get("KeyManager") == "AWS":
            raise ChaosError(f"key {arn} is AWS managed: it cannot be disabled")
        key_id = metadata["KeyId"]  # some emulators take only the id for DisableKey / EnableKey
        target.store.remember(f"kms.{key_id}", metadata.get("KeyState"))
        target.store.record_fault({"kind": "kms_disable"})
        if metadata.get("KeyState") == "Disabled":
            return [f"KMS key {key_id} is already disabled"]
        kms.disable_key(KeyId=key_id)
        return [f"disabled KMS key {key_id} (it encrypts the environment of {target.function_name})"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        key_id = slot.removeprefix("kms.")
        kms = target.clients.get("kms")
        if original == "Enabled":
            kms.enable_key(KeyId=key_id)
            return f"KMS key {key_id} enabled again"
        if original == "Disabled":
            kms.disable_key(KeyId=key_id)
            return f"KMS key {key_id} left disabled, as it was"
        return f"KMS key {key_id} was {original}: nothing to put back"
