"""A small IAM policy evaluator: explicit Deny wins, otherwise some Allow must match.

The lab workload uses it to decide what its role lets it do (moto does not implement
``simulate_principal_policy`` and enforces nothing). It understands Action/NotAction and
Resource/NotResource with ``*`` and ``?`` wildcards; Conditions are ignored, which is stated
wherever the result is shown to a person.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Any


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _matches(patterns: Iterable[str], value: str, *, case_sensitive: bool) -> bool:
    for pattern in patterns:
        if case_sensitive:
            if fnmatch.fnmatchcase(value, pattern):
                return True
        elif fnmatch.fnmatchcase(value.lower(), pattern.lower()):
            return True
    return False


def statements(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The statements of a policy document, always as a list."""
    stmts = document.get("Statement", [])
    return [stmts] if isinstance(stmts, dict) else list(stmts)


def statement_applies(statement: dict[str, Any], action: str, resource: str) -> bool:
    if "Action" in statement:
        if not _matches(_as_list(statement["Action"]), action, case_sensitive=False):
            return False
    elif "NotAction" in statement:
        if _matches(_as_list(statement["NotAction"]), action, case_sensitive=False):
            return False
    else:
        return False
    if "Resource" in statement:
        return _matches(_as_list(statement["Resource"]), resource, case_sensitive=True)
    if "NotResource" in statement:
        return not _matches(_as_list(statement["NotResource"]), resource, case_sensitive=True)
    return False


def is_allowed(documents: Iterable[dict[str, Any]], action: str, resource: str) -> bool:
    """Whether the identity policies allow ``action`` on ``resource``.

    >>> doc = {"Statement": [{"Effect": "Allow", "Action": "s3:Get*", "Resource": "arn:aws:s3:::b/*"}]}
    >>> is_allowed([doc], "s3:GetObject", "arn:aws:s3:::b/key")
    True
    """
    allowed = False
    for document in documents:
        for statement in statements(document):
            if not statement_applies(statement, action, resource):
                continue
            if statement.get("Effect") == "Deny":
                return False
            if statement.get("Effect") == "Allow":
                allowed = True
    return allowed


def action_service(action: str) -> str:
    """``s3:GetObject`` -> ``s3``; ``*`` stays ``*``."""
    return "*" if action == "*" else action.split(":", 1)[0].lower()


def statement_services(statement: dict[str, Any]) -> set[str]:
    """The service prefixes (``s3``, ``logs``...) a statement's actions name; ``*`` for all."""
    return {action_service(a) for a in _as_list(statement.get("Action")) + _as_list(statement.get("NotAction"))}
