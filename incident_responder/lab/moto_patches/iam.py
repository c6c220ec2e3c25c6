"""SERVING the lab's IAM: a role's inline policies, read back as AWS returns them."""

from __future__ import annotations

import json
from typing import Any


def _inline_policies_as_json() -> None:
    """moto's CloudFormation hands a role's inline policy to ``Role.put_policy`` as a dict, which GetRolePolicy then
    renders as a Python repr: boto3 returns it as a string where AWS returns a document, and reading the stack's own
    roles (``responder onboard`` of one of its functions) failed on a shape AWS never sends. Stored as JSON instead."""
    from moto.iam.models import Role

    original = Role.put_policy
    if getattr(original, "_lab_json", False):
        return

    def put_policy(self: Any, policy_name: str, policy_json: Any) -> None:
        original(self, policy_name, policy_json if isinstance(policy_json, str) else json.dumps(policy_json))

    put_policy._lab_json = True  # type: ignore[attr-defined]
    Role.put_policy = put_policy  # type: ignore[method-assign]
