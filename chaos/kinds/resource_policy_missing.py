"""resource_policy_missing: the statement of the function's resource-based policy that lets its caller invoke it is
removed (catalogue entry resource-policy-missing)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chaos.errors import ChaosError
from chaos.kinds.base import ORDERS_API, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.account.state import permission_key, read_aliases, read_invoke_permissions
from incident_responder.core.contracts import FaultType


class ResourcePolicyMissing(KindParameters):
    """RemovePermission of every statement that grants this principal (the service or account that invokes it)."""

    kind: Literal["resource_policy_missing"]
    principal: str = Field(default="apigateway.amazonaws.com", pattern=r"^[^\s*]{1,256}$")


class ResourcePolicyMissingKind(ChaosKind[ResourcePolicyMissing]):
    """Remove the resource-based policy statement that lets the function's caller invoke it."""

    parameters = ResourcePolicyMissing
    fault_type = FaultType.INVOKE_PERMISSION_LOST
    # Only orders-api is invoked by another service under its resource-based policy (API Gateway); the others are
    # invoked by their event source mapping (the execution role) or directly.
    workloads = frozenset({ORDERS_API})
    refusal = "has no resource-based policy statement granting"
    slots = ("invoke_permission",)
    help = "remove the resource-based policy statement that lets the function's caller invoke it"
    defaults = {"principal": "apigateway.amazonaws.com"}
    argument_help = {"principal": "the caller whose statements are removed (default: apigateway.amazonaws.com)"}
    example = {"principal": "apigateway.amazonaws.com"}

    def inject(self, target: FaultTarget, params: ResourcePolicyMissing) -> list[str]:
        name = target.function_name
        granted = [
            p
            for p in read_invoke_permissions(target.clients, name, read_aliases(target.clients, name))
            if p.principal == params.principal
        ]
        if not granted:
            raise ChaosError(
                f"{name} has no resource-based policy statement granting {params.principal}: nothing to remove"
            )
        done = []
        for permission in granted:
            target.store.remember(f"invoke_permission.{permission_key(permission)}", permission.model_dump())
            qualifier = {"Qualifier": permission.qualifier} if permission.qualifier else {}
            target.lambda_client.remove_permission(FunctionName=name, StatementId=permission.statement_id, **qualifier)
            done.append(f"removed statement {permission.statement_id} ({params.principal}) from {name}'s policy")
        target.store.record_fault({"kind": "resource_policy_missing", "principal": params.principal})
        return done

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        name = target.function_name
        present = read_invoke_permissions(target.clients, name, read_aliases(target.clients, name))
        if any(permission_key(p) == slot.removeprefix("invoke_permission.") for p in present):
            # Put back already (the responder's restore): granting it twice would be refused as a conflict.
            return f"statement {original['statement_id']} is in {name}'s policy already"
        optional = {
            "Qualifier": original.get("qualifier"),
            "SourceArn": original.get("source_arn"),
            "SourceAccount": original.get("source_account"),
            "PrincipalOrgID": original.get("principal_org_id"),
        }
        target.lambda_client.add_permission(
            FunctionName=target.function_name,
            StatementId=original["statement_id"],
            Action=original.get("action") or "lambda:InvokeFunction",
            Principal=original["principal"],
            **{k: v for k, v in optional.items() if v},
        )
        return f"statement {original['statement_id']} restored to {target.function_name}'s policy"
