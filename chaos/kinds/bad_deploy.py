"""bad_deploy: a new version whose code throws, published and made live through the alias its callers use."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chaos.code import broken_package, code_sha256
from chaos.errors import ChaosError
from chaos.kinds.base import ORDERS_API, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType

DEFAULT_DEPLOY_ERROR = "TypeError: Cannot read properties of undefined (reading 'id')"


class BadDeploy(KindParameters):
    """A new version whose code throws, published and made live through the function's alias."""

    kind: Literal["bad_deploy"]
    error: str | None = Field(default=None, max_length=300, description='e.g. "TypeError: x is not a function"')


class BadDeployKind(ChaosKind[BadDeploy]):
    """Deploy code that throws ``error``, publish it as a new version and point the function's alias at it. Restore
    moves only the alias back (a rollback): the newer version stays published, as in a real account."""

    parameters = BadDeploy
    fault_type = FaultType.DEPLOYMENT_REGRESSION
    workloads = frozenset({ORDERS_API})
    refusal = "has no alias"
    slots = ("alias",)  # alias.<name>: the version it routed to
    help = "publish a version whose code throws and move the function's alias to it"
    argument_help = {"error": "what the code throws (default: a TypeError reading 'id' of undefined)"}

    def inject(self, target: FaultTarget, params: BadDeploy) -> list[str]:
        error = params.error or DEFAULT_DEPLOY_ERROR
        lam = target.lambda_client
        config = target.config()
        alias = _alias(target)
        name, current = alias["Name"], alias["FunctionVersion"]
        package = broken_package(config.get("Runtime", ""), config.get("Handler", ""), error)
        sha = code_sha256(package)
        current_sha = lam.get_function_configuration(FunctionName=target.function_name, Qualifier=current)["CodeSha256"]
        target.store.remember(f"alias.{name}", {"function_version": current})
        target.store.record_fault({"kind": "bad_deploy", "error": error})
        if current_sha == sha:
            return [f"alias {name} already routes to version {current}, whose code throws {error}"]
        lam.update_function_code(FunctionName=target.function_name, ZipFile=package)
        target.wait_updated()
        version = lam.publish_version(FunctionName=target.function_name, CodeSha256=sha)["Version"]
        lam.update_alias(FunctionName=target.function_name, Name=name, FunctionVersion=version)
        return [
            f"published version {version}, whose code throws {error}",
            f"alias {name}: version {current} -> {version}",
        ]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        name = slot.removeprefix("alias.")
        version = original["function_version"]
        lam = target.lambda_client
        try:
            lam.update_alias(FunctionName=target.function_name, Name=name, FunctionVersion=version)
        except lam.exceptions.ResourceNotFoundException:  # deleted (function_not_found records the same slot)
            lam.create_alias(FunctionName=target.function_name, Name=name, FunctionVersion=version)
        return f"alias {name} routes to version {version} again"


def _alias(target: FaultTarget) -> dict[str, Any]:
    """The alias callers use: ``live`` if the function has it, else its only (or first) alias."""
    aliases = [
        alias
        for page in target.lambda_client.get_paginator("list_aliases").paginate(FunctionName=target.function_name)
        for alias in page["Aliases"]
    ]
    if not aliases:
        raise ChaosError(
            f"{target.function_name} has no alias: its callers invoke $LATEST, there is no alias to move to a new version"
        )
    return next((a for a in aliases if a["Name"] == "live"), sorted(aliases, key=lambda a: a["Name"])[0])
