"""vpc_permissions_missing: the function's execution role loses the Amazon EC2 permissions Lambda uses to manage its
network interfaces (catalogue entry vpc-permissions-missing)."""

from __future__ import annotations

import json
from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ChaosKind, KindParameters
from chaos.kinds.iam_revoke import IamRevokeKind, _strip_services
from chaos.target import FaultTarget
from incident_responder.account.iam_policy import is_allowed, statement_services, statements
from incident_responder.account.network import read_network
from incident_responder.account.role import managed_policy_documents, read_role
from incident_responder.core.contracts import FaultType


class VpcPermissionsMissing(KindParameters):
    """Inline statements lose their ec2 actions; a managed policy granting network interfaces (such as
    AWSLambdaVPCAccessExecutionRole) is detached."""

    kind: Literal["vpc_permissions_missing"]


class VpcPermissionsMissingKind(ChaosKind[VpcPermissionsMissing]):
    """Remove the execution role's network interface permissions (ec2:CreateNetworkInterface and the rest)."""

    parameters = VpcPermissionsMissing
    fault_type = FaultType.PERMISSION_LOSS
    workloads = frozenset({DATA_PROCESSOR})
    refusal = "not attached to a VPC"
    slots = ("vpc_iam",)  # vpc_iam.inline.<policy>, vpc_iam.attached.<arn>
    help = "remove the role's network interface permissions (those of AWSLambdaVPCAccessExecutionRole)"

    def inject(self, target: FaultTarget, params: VpcPermissionsMissing) -> list[str]:
        config = target.config()
        if not read_network(target.clients, config.get("VpcConfig")).in_vpc:
            raise ChaosError(f"{target.function_name} is not attached to a VPC: Lambda manages no interfaces for it")
        iam = target.clients.get("iam")
        role = read_role(target.clients, config["Role"])
        changes = []
        for name, document in role.inline_policies.items():
            original = statements(document)
            kept = [s for s in (_strip_services(st, {"ec2"}) for st in original) if s is not None]
            if kept == original:
                continue
            target.store.remember(f"vpc_iam.inline.{name}", document)
            if kept:
                iam.put_role_policy(
                    RoleName=role.role_name, PolicyName=name, PolicyDocument=json.dumps({**document, "Statement": kept})
                )
                changes.append(f"removed ec2 actions from inline policy {name}")
            else:
                iam.delete_role_policy(RoleName=role.role_name, PolicyName=name)
                changes.append(f"deleted inline policy {name}")
        for arn, document in managed_policy_documents(target.clients, role.attached_policy_arns).items():
            used = set().union(*(statement_services(st) for st in statements(document)))
            if is_allowed([document], "ec2:CreateNetworkInterface", "*") and used <= {"ec2", "logs"}:
                target.store.remember(f"vpc_iam.attached.{arn}", True)
                iam.detach_role_policy(RoleName=role.role_name, PolicyArn=arn)
                changes.append(f"detached managed policy {arn}")
        target.store.record_fault({"kind": "vpc_permissions_missing"})
        return changes or [f"role {role.role_name} already grants no network interface permissions"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        return IamRevokeKind().restore(target, "iam." + slot.removeprefix("vpc_iam."), original)
