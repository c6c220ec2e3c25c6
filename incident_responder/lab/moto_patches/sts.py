"""SERVING the lab's STS: AssumeRole answers only as its role's trust policy allows, as AWS does.

moto hands out credentials for any role ARN, of any account, whether or not the role exists or trusts the caller.
The lab emulates many accounts with the credentials AssumeRole returns (moto keeps each account's state apart by
them), so who may assume what is the boundary between accounts: the role must exist in its account, and its trust
policy must allow the caller (its principal, by account or ARN; a function's, its execution role: FUNCTION_ROLES)
under the conditions the lab's roles use
(``sts:ExternalId``, ``aws:PrincipalArn``, ``aws:PrincipalAccount``; String and Arn operators, with ``*`` and ``?``).
Anything else is refused with AccessDenied, in AWS's words.
"""

from __future__ import annotations

import fnmatch
import json
from typing import Any

OPERATORS = {"StringEquals", "StringLike", "ArnEquals", "ArnLike"}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


# The lab's stand-in for Lambda: the credentials it gave each function of an organisation lab (access key -> the
# function's execution role), as Lambda gives a function its role's (lab/organisation.py: function_credentials).
# Kept across a redeploy: the key stays the function's, the role it names is the redeployed one.
FUNCTION_ROLES: dict[str, str] = {}


def _principal_matches(principal: Any, caller_arn: str, caller_account: str) -> bool:
    if principal == "*":
        return True
    if not isinstance(principal, dict):
        return False
    for named in _as_list(principal.get("AWS", [])):
        if named == "*" or named in (caller_arn, caller_account, f"arn:aws:iam::{caller_account}:root"):
            return True
    return False


def _conditions_hold(conditions: dict[str, Any], context: dict[str, str | None]) -> bool:
    for operator, tests in conditions.items():
        if operator not in OPERATORS:
            return False  # an operator the lab does not evaluate never allows
        for key, wanted in tests.items():
            actual = context.get(key.lower())
            if actual is None:
                return False
            like = operator.endswith("Like")
            if not any(fnmatch.fnmatchcase(actual, w) if like else actual == w for w in _as_list(wanted)):
                return False
    return True


def trust_allows(document: dict[str, Any], caller_arn: str, caller_account: str, external_id: str | None) -> bool:
    """Whether the trust policy ``document`` lets ``caller_arn`` (of ``caller_account``) assume its role."""
    context = {
        "sts:externalid": external_id,
        "aws:principalarn": caller_arn,
        "aws:principalaccount": caller_account,
    }
    allowed = False
    for statement in _as_list(document.get("Statement", [])):
        actions = _as_list(statement.get("Action", []))
        if not any(fnmatch.fnmatchcase("sts:AssumeRole", a) for a in actions):
            continue
        if not _principal_matches(statement.get("Principal"), caller_arn, caller_account):
            continue
        if not _conditions_hold(statement.get("Condition", {}), context):
            continue
        if statement.get("Effect") == "Deny":
            return False
        allowed = allowed or statement.get("Effect") == "Allow"
    return allowed


def honour_trust_policies() -> None:
    from moto.iam.models import get_account_id_from, iam_backends
    from moto.sts.exceptions import STSClientError
    from moto.sts.models import sts_backends
    from moto.sts.responses import TokenResponse

    original = TokenResponse.assume_role
    if getattr(original, "_lab_trust", False):
        return

    def assume_role(self: Any) -> Any:
        key = self.get_access_key()
        account = get_account_id_from(key)
        assumed = sts_backends[account]["aws"].get_assumed_role_from_access_key(key)
        caller = FUNCTION_ROLES.get(key) or (
            assumed.role_arn if assumed is not None else f"arn:aws:iam::{account}:root"
        )
        account = caller.split(":")[4] if caller.startswith("arn:") else account
        role_arn = str(self._get_param("RoleArn") or "")
        parts = role_arn.split(":")
        denied = STSClientError(
            "AccessDenied",
            f"User: {caller} is not authorized to perform: sts:AssumeRole on resource: {role_arn}",
        )
        if len(parts) != 6 or parts[2] != "iam" or not parts[5].startswith("role/"):
            raise denied
        try:
            role = iam_backends[parts[4]]["aws"].get_role(parts[5].rsplit("/", 1)[-1])
        except Exception:  # noqa: BLE001 - no such role in that account: AWS says only that it is denied
            raise denied from None
        document = role.assume_role_policy_document
        document = json.loads(document) if isinstance(document, str) else document
        if not trust_allows(document or {}, caller, account, self._get_param("ExternalId")):
            raise denied
        return original(self)

    assume_role._lab_trust = True  # type: ignore[attr-defined]
    TokenResponse.assume_role = assume_role  # type: ignore[method-assign]
