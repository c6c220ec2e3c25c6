"""Fault injection into the function's role: its permissions for S3, CloudWatch Logs, DynamoDB or SQS revoked."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from chaos.errors import ChaosError
from chaos.target import FaultTarget
from incident_responder.account.iam_policy import action_service, statement_services, statements
from incident_responder.account.role import managed_policy_documents, read_role

IAM_TARGET_SERVICES = {
    "s3": {"s3"},
    "cloudwatch": {"logs"},
    "both": {"s3", "logs"},
    "dynamodb": {"dynamodb"},
    "sqs": {"sqs"},
}


def _strip_services(statement: dict[str, Any], services: set[str]) -> dict[str, Any] | None:
    """The statement without the actions of ``services``; None if nothing of it remains."""
    if statement.get("Effect") != "Allow":
        return statement
    if "NotAction" in statement:
        return None  # "everything except X" grants the target too: drop it whole
    actions = statement.get("Action", [])
    actions = [actions] if isinstance(actions, str) else list(actions)
    kept = [a for a in actions if action_service(a) not in services and action_service(a) != "*"]
    if len(kept) == len(actions):
        return statement
    if not kept:
        return None
    return {**statement, "Action": kept if len(kept) > 1 else kept[0]}


class PermissionFaults(FaultTarget):
    """Faults in the role the function runs as."""

    def iam_revoke(self, target: str = "s3") -> list[str]:
        """Remove the role's permissions for S3 (``s3``), CloudWatch Logs (``cloudwatch``), ``both`` of those,
        DynamoDB (``dynamodb``) or SQS (``sqs``)."""
        if target not in IAM_TARGET_SERVICES:
            raise ChaosError(f"iam_revoke target must be one of {sorted(IAM_TARGET_SERVICES)}, not {target!r}")
        services = IAM_TARGET_SERVICES[target]
        iam = self.clients.get("iam")
        role = read_role(self.clients, self._config()["Role"])
        changes = []
        for name, document in role.inline_policies.items():
            original = statements(document)
            kept = [s for s in (_strip_services(st, services) for st in original) if s is not None]
            if kept == original:
                continue
            self.store.remember(f"iam.inline.{name}", document)
            if kept:
                iam.put_role_policy(
                    RoleName=role.role_name, PolicyName=name, PolicyDocument=json.dumps({**document, "Statement": kept})
                )
                changes.append(f"removed {'/'.join(sorted(services))} actions from inline policy {name}")
            else:
                iam.delete_role_policy(RoleName=role.role_name, PolicyName=name)
                changes.append(f"deleted inline policy {name}")
        # Managed policies cannot be edited: detach those that grant only the target services.
        for arn, document in managed_policy_documents(self.clients, role.attached_policy_arns).items():
            used = set().union(*(statement_services(st) for st in statements(document)))
            if used and used <= services:
                self.store.remember(f"iam.attached.{arn}", True)
                iam.detach_role_policy(RoleName=role.role_name, PolicyArn=arn)
                changes.append(f"detached managed policy {arn}")
        self.store.record_fault({"kind": "iam_revoke", "target": target})
        return changes or [f"role {role.role_name} already grants no {target} permissions"]

    def _restore_iam(self, rest: str, original: Any) -> str:
        iam = self.clients.get("iam")
        role_name = read_role(self.clients, self._config()["Role"]).role_name
        what, _, name = rest.partition(".")
        if what == "attached":
            iam.attach_role_policy(RoleName=role_name, PolicyArn=name)
            return f"re-attached {name}"
        if original is None:
            try:
                iam.delete_role_policy(RoleName=role_name, PolicyName=name)
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "NoSuchEntity":
                    raise
            return f"inline policy {name} removed (it did not exist)"
        iam.put_role_policy(RoleName=role_name, PolicyName=name, PolicyDocument=json.dumps(original))
        return f"inline policy {name} restored"
