"""Fault injection into the key that encrypts the function's environment: disabled, or its role no longer allowed to
decrypt."""

from __future__ import annotations

import json
from typing import Any

from chaos.errors import ChaosError
from chaos.target import FaultTarget
from incident_responder.account.iam_policy import statements


class KeyFaults(FaultTarget):
    """Faults in the customer-managed KMS key of the function's environment."""

    def kms_disable(self) -> list[str]:
        """Disable the customer-managed key that encrypts the function's environment."""
        arn = self._config().get("KMSKeyArn")
        if not arn:
            raise ChaosError(
                f"{self.function_name}'s environment is encrypted with an AWS managed key: "
                "there is no customer-managed key to disable"
            )
        kms = self.clients.get("kms")
        metadata = kms.describe_key(KeyId=arn)["KeyMetadata"]
        if metadata.get("KeyManager") == "AWS":
            raise ChaosError(f"key {arn} is AWS managed: it cannot be disabled")
        key_id = metadata["KeyId"]  # some emulators take only the id for DisableKey / EnableKey
        self.store.remember(f"kms.{key_id}", metadata.get("KeyState"))
        self.store.record_fault({"kind": "kms_disable"})
        if metadata.get("KeyState") == "Disabled":
            return [f"KMS key {key_id} is already disabled"]
        kms.disable_key(KeyId=key_id)
        return [f"disabled KMS key {key_id} (it encrypts the environment of {self.function_name})"]

    def kms_revoke(self) -> list[str]:
        """Remove from the key policy the statements that let the function's role decrypt (the key stays enabled)."""
        config = self._config()
        arn = config.get("KMSKeyArn")
        if not arn:
            raise ChaosError(f"{self.function_name}'s environment is not encrypted with a customer-managed key")
        kms = self.clients.get("kms")
        key_id = kms.describe_key(KeyId=arn)["KeyMetadata"]["KeyId"]
        policy = json.loads(kms.get_key_policy(KeyId=key_id, PolicyName="default")["Policy"])
        role_arn = config["Role"]

        def grants_role(statement: dict[str, Any]) -> bool:
            principal = statement.get("Principal")
            named = principal.get("AWS", []) if isinstance(principal, dict) else []
            return statement.get("Effect") == "Allow" and role_arn in ([named] if isinstance(named, str) else named)

        kept = [st for st in statements(policy) if not grants_role(st)]
        if len(kept) == len(statements(policy)) and f"keypolicy.{key_id}" in self.store.slots:
            return [f"key {key_id}'s policy already lets {role_arn.rsplit('/', 1)[-1]} decrypt nothing"]
        if len(kept) == len(statements(policy)):
            raise ChaosError(
                f"key {key_id}'s policy names no statement for {role_arn}: its decrypt comes from its IAM policies "
                "(use iam_revoke)"
            )
        self.store.remember(f"keypolicy.{key_id}", policy)
        kms.put_key_policy(KeyId=key_id, PolicyName="default", Policy=json.dumps({**policy, "Statement": kept}))
        self.store.record_fault({"kind": "kms_revoke"})
        return [f"key {key_id}: removed the key policy statement(s) letting {role_arn.rsplit('/', 1)[-1]} decrypt"]

    def _restore_key(self, key_id: str, original: str | None) -> str:
        kms = self.clients.get("kms")
        if original == "Enabled":
            kms.enable_key(KeyId=key_id)
            return f"KMS key {key_id} enabled again"
        if original == "Disabled":
            kms.disable_key(KeyId=key_id)
            return f"KMS key {key_id} left disabled, as it was"
        return f"KMS key {key_id} was {original}: nothing to put back"
