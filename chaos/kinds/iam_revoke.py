"""iam_revoke: the function's role loses its permissions for S3, CloudWatch Logs, DynamoDB or SQS."""

from __future__ import annotations

import json
from typing import Any, Literal

from botocore.exceptions import ClientError

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ORDERS_API, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.account.iam_policy import action_service, statement_services, statements
from incident_responder.account.role import managed_policy_documents, read_role
from incident_responder.core.contracts import FaultType

IAM_TARGET_SERVICES = {
    "s3": {"s3"},
    "cloudwatch": {"logs"},
    "both": {"s3", "logs"},
    "dynamodb": {"dynamodb"},
    "sqs": {"sqs"},
}


class IamRevoke(KindParameters):
    kind: Literal["iam_revoke"]
    # s3 (data-processor's data), dynamodb (orders-api's table), sqs (queue-consumer's queue), cloudwatch
    # (logs), both (s3 and cloudwatch)
    target: Literal["s3", "cloudwatch", "both", "dynamodb", "sqs"]


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


class IamRevokeKind(ChaosKind[IamRevoke]):
    """Remove the role's permissions for S3 (``s3``), CloudWatch Logs (``cloudwatch``), ``both`` of those,
    DynamoDB (``dynamodb``) or SQS (``sqs``): inline statements lose those actions, managed policies granting only
    them are detached."""

    parameters = IamRevoke
    fault_type = FaultType.PERMISSION_LOSS
    workloads = frozenset({DATA_PROCESSOR, ORDERS_API, QUEUE_CONSUMER})
    slots = ("iam",)  # iam.inline.<policy>, iam.attached.<arn>
    help = "remove the role's S3, CloudWatch Logs, DynamoDB or SQS permissions"
    defaults = {"target": "s3"}
    example = {"target": "s3"}

    def inject(self, target: FaultTarget, params: IamRevoke) -> list[str]:
        if params.target not in IAM_TARGET_SERVICES:
            raise ChaosError(f"iam_revoke target must be one of {sorted(IAM_TARGET_SERVICES)}, not {params.target!r}")
        return self.revoke(target, IAM_TARGET_SERVICES[params.target], {"kind": "iam_revoke", "target": params.target})

    def revoke(self, target: FaultTarget, services: set[str], fault: dict[str, Any]) -> list[str]:
        """Remove the role's permissions for ``services`` (recording each original) and record ``fault``."""
        iam = target.clients.get("iam")
        role = read_role(target.clients, target.config()["Role"])
        changes = []
        for name, document in role.inline_policies.items():
            original = statements(document)
            kept = [s for s in (_strip_services(st, services) for st in original) if s is not None]
            if kept == original:
                continue
            target.store.remember(f"iam.inline.{name}", document)
            if kept:
                iam.put_role_policy(
                    RoleName=role.role_name, PolicyName=name, PolicyDocument=json.dumps({**document, "Statement": kept})
                )
                changes.append(f"removed {'/'.join(sorted(services))} actions from inline policy {name}")
            else:
                iam.delete_role_policy(RoleName=role.role_name, PolicyName=name)
                changes.append(f"deleted inline policy {name}")
        # Managed policies cannot be edited: detach those that grant only the target services.
        for arn, document in managed_policy_documents(target.clients, role.attached_policy_arns).items():
            used = set().union(*(statement_services(st) for st in statements(document)))
            if used and used <= services:
                target.store.remember(f"iam.attached.{arn}", True)
                iam.detach_role_policy(RoleName=role.role_name, PolicyArn=arn)
                changes.append(f"detached managed policy {arn}")
        target.store.record_fault(fault)
        return changes or [f"role {role.role_name} already grants no {'/'.join(sorted(services))} permissions"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        iam = target.clients.get("iam")
        role_name = read_role(target.clients, target.config()["Role"]).role_name
        what, _, name = slot.removeprefix("iam.").partition(".")
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
