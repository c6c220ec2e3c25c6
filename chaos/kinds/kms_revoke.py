"""kms_revoke: the key policy no longer lets the function's role decrypt its environment (the key stays enabled)."""

from __future__ import annotations

import json
from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import ORDERS_API, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.account.iam_policy import statements
from incident_responder.core.contracts import FaultType


class KmsRevoke(KindParameters):
    """The key policy no longer lets the function's role decrypt (the key stays enabled)."""

    kind: Literal["kms_revoke"]


class KmsRevokeKind(ChaosKind[KmsRevoke]):
    """Remove from the key policy the statements that let the function's role decrypt (the key stays enabled)."""

    parameters = KmsRevoke
    fault_type = FaultType.KMS_ACCESS_DENIED
    workloads = frozenset({ORDERS_API})
    refusal = "not encrypted with a customer-managed key"
    slots = ("keypolicy",)  # keypolicy.<key id>: the whole key policy
    help = "remove the key policy statement letting its role decrypt its environment"

    def inject(self, target: FaultTarget, params: KmsRevoke) -> list[str]:
        config = target.config()
        arn = config.get("KMSKeyArn")
        if not arn:
            raise ChaosError(f"{target.function_name}'s environment is not encrypted with a customer-managed key")
        kms = target.clients.get("kms")
        key_id = kms.describe_key(KeyId=arn)["KeyMetadata"]["KeyId"]
        policy = json.loads(kms.get_key_policy(KeyId=key_id, PolicyName="default")["Policy"])
        role_arn = config["Role"]

        def grants_role(statement: dict[str, Any]) -> bool:
            principal = statement.get("Principal")
            named = principal.get("AWS", []) if isinstance(principal, dict) else []
            return statement.get("Effect") == "Allow" and role_arn in ([named] if isinstance(named, str) else named)

        kept = [st for st in statements(policy) if not grants_role(st)]
        if len(kept) == len(statements(policy)) and f"keypolicy.{key_id}" in target.store.slots:
            return [f"key {key_id}'s policy already lets {role_arn.rsplit('/', 1)[-1]} decrypt nothing"]
        if len(kept) == len(statements(policy)):
            raise ChaosError(
                f"key {key_id}'s policy names no statement for {role_arn}: its decrypt comes from its IAM policies "
                "(use iam_revoke)"
            )
        target.store.remember(f"keypolicy.{key_id}", policy)
        kms.put_key_policy(KeyId=key_id, PolicyName="default", Policy=json.dumps({**policy, "Statement": kept}))
        target.store.record_fault({"kind": "kms_revoke"})
        return [f"key {key_id}: removed the key policy statement(s) letting {role_arn.rsplit('/', 1)[-1]} decrypt"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        key_id = slot.removeprefix("keypolicy.")
        target.clients.get("kms").put_key_policy(KeyId=key_id, PolicyName="default", Policy=json.dumps(original))
        return f"key {key_id}: key policy restored"
