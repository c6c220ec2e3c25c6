"""function_not_found: the alias the function's caller invokes is deleted (catalogue entry function-not-found)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chaos.errors import ChaosError
from chaos.kinds.bad_deploy import BadDeployKind
from chaos.kinds.base import ORDERS_API, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


class FunctionNotFound(KindParameters):
    """DeleteAlias of the alias the caller names (its caller keeps invoking the alias's ARN)."""

    kind: Literal["function_not_found"]
    alias: str = Field(default="live", pattern=r"^[a-zA-Z0-9_-]*[a-zA-Z_-][a-zA-Z0-9_-]*$", max_length=128)


class FunctionNotFoundKind(ChaosKind[FunctionNotFound]):
    """Delete the alias the function's caller invokes."""

    parameters = FunctionNotFound
    fault_type = FaultType.DEPLOYMENT_REGRESSION
    # Only orders-api's caller names an alias; the others are invoked unqualified (a missing function is no fault a
    # baseline can restore).
    workloads = frozenset({ORDERS_API})
    refusal = "has no alias"
    slots = ("alias",)
    help = "delete the alias the function's caller invokes (the caller gets ResourceNotFoundException)"
    defaults = {"alias": "live"}
    argument_help = {"alias": "the alias deleted (default: live, the one orders-api's caller invokes)"}
    example = {"alias": "live"}

    def inject(self, target: FaultTarget, params: FunctionNotFound) -> list[str]:
        name = target.function_name
        aliases = {a["Name"]: a for a in target.lambda_client.list_aliases(FunctionName=name)["Aliases"]}
        alias = aliases.get(params.alias)
        if alias is None:
            raise ChaosError(f"{name} has no alias {params.alias}: nothing to delete")
        target.store.remember(f"alias.{params.alias}", {"function_version": alias["FunctionVersion"]})
        target.lambda_client.delete_alias(FunctionName=name, Name=params.alias)
        target.store.record_fault({"kind": "function_not_found", "alias": params.alias})
        return [f"deleted alias {params.alias} of {name} (it routed to version {alias['FunctionVersion']})"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        return BadDeployKind().restore(target, slot, original)  # the same slot: re-created when deleted
