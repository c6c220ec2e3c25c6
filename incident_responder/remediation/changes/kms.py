"""REMEDIATING and ROLLING_BACK: a KMS key enabled again."""

from __future__ import annotations

from typing import Any

from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import EnableKmsKeyParams
from incident_responder.remediation.changes.base import _Change


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
