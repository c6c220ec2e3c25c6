"""Every stage: the customer-managed KMS key of a function's environment, its state, and whether the role may decrypt."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from incident_responder.account.role import RoleState, role_policy_documents
from incident_responder.core.aws import AwsClients


class KmsKeyState(BaseModel):
    """A customer-managed key the function depends on, and whether KMS will use it."""

    key_arn: str
    key_state: str | None = Field(default=None, description="KMS KeyState: Enabled, Disabled, PendingDeletion, ...")
    used_for: str = Field(default="environment", description="what the function uses the key for")
    role_may_decrypt: bool | None = Field(
        default=None,
        description="whether the key policy (directly, or through the account and the role's own policies) lets "
        "the execution role decrypt with it; None: the key policy could not be read",
    )
    found: bool = Field(default=True, description="False: KMS has no such key (deleted, or it never existed)")


def read_kms_keys(clients: AwsClients, config: dict[str, Any], role: RoleState | None = None) -> list[KmsKeyState]:
    """The customer-managed key encrypting the function's environment, with its state (none: AWS-owned key)
    and, given the role, whether the role may decrypt with it."""
    arn = config.get("KMSKeyArn")
    if not arn:
        return []
    kms = clients.get("kms")
    try:
        metadata = kms.describe_key(KeyId=arn)["KeyMetadata"]
    except kms.exceptions.NotFoundException:
        return [KmsKeyState(key_arn=arn, found=False)]
    may_decrypt = None
    if role is not None:
        from botocore.exceptions import ClientError

        try:
            policy = json.loads(kms.get_key_policy(KeyId=metadata.get("KeyId", arn), PolicyName="default")["Policy"])
        except (ClientError, ValueError):
            policy = None
        if policy is not None:
            may_decrypt = key_policy_lets_role_decrypt(
                policy, metadata.get("Arn", arn), role, role_policy_documents(clients, role)
            )
    return [
        KmsKeyState(key_arn=metadata.get("Arn", arn), key_state=metadata.get("KeyState"), role_may_decrypt=may_decrypt)
    ]


def _principals(statement: dict[str, Any]) -> list[str]:
    principal = statement.get("Principal")
    if principal == "*":
        return ["*"]
    if isinstance(principal, dict):
        value = principal.get("AWS", [])
        return [value] if isinstance(value, str) else list(value)
    return []


def key_policy_lets_role_decrypt(
    policy: dict[str, Any], key_arn: str, role: RoleState, role_documents: list[dict[str, Any]]
) -> bool:
    """Whether ``kms:Decrypt`` on the key is allowed for the role, as KMS decides it without conditions: an
    explicit deny (key policy or the role's) refuses; the key policy allows the role itself, or allows the
    account (its root), which delegates to the role's own policies."""
    from incident_responder.account.iam_policy import is_allowed, statement_applies, statements

    account = key_arn.split(":")[4]
    role_principals = {role.role_arn, "*"}
    account_principals = {account, f"arn:aws:iam::{account}:root", f"arn:aws-cn:iam::{account}:root"}
    to_role = to_account = False
    for statement in statements(policy):
        if not statement_applies({**statement, "Resource": "*"}, "kms:Decrypt", key_arn):
            continue
        principals = set(_principals(statement))
        if statement.get("Effect") == "Deny" and principals & (role_principals | account_principals):
            return False
        if statement.get("Effect") == "Allow":
            to_role = to_role or bool(principals & role_principals)
            to_account = to_account or bool(principals & account_principals)
    denied_by_role = any(
        s.get("Effect") == "Deny" and statement_applies(s, "kms:Decrypt", key_arn)
        for d in role_documents
        for s in statements(d)
    )
    if denied_by_role:
        return False
    return to_role or (to_account and is_allowed(role_documents, "kms:Decrypt", key_arn))
