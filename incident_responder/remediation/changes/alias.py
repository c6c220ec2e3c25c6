"""REMEDIATING and ROLLING_BACK: an alias pointed back at the version it routed to."""

from __future__ import annotations

from typing import Any

from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import RollbackAliasParams
from incident_responder.remediation.changes.base import _Change


class _AliasVersion(_Change):
    """UpdateAlias FunctionVersion (weighted routing, which the baseline does not record, is left as it is)."""

    def resources(self, p: RollbackAliasParams) -> list[str]:
        return [f"alias:{p.function_name}:{p.alias_name}"]

    def satisfied(self, p: RollbackAliasParams, state: dict[str, Any]) -> bool:
        return bool(state["function_version"] == p.function_version)

    def capture(self, clients: AwsClients, p: RollbackAliasParams) -> dict[str, Any]:
        alias = clients.get("lambda").get_alias(FunctionName=p.function_name, Name=p.alias_name)
        return {
            "function_name": p.function_name,
            "alias_name": p.alias_name,
            "function_version": alias["FunctionVersion"],
        }

    def apply(self, clients: AwsClients, p: RollbackAliasParams) -> str:
        return self._point(clients, p, p.function_version)

    def restore(self, clients: AwsClients, p: RollbackAliasParams, prior: dict[str, Any]) -> None:
        self._point(clients, p, prior["function_version"])

    def _point(self, clients: AwsClients, p: RollbackAliasParams, version: str) -> str:
        what = f"alias {p.alias_name} of {p.function_name}"
        if self.capture(clients, p)["function_version"] == version:
            return f"{what} already routes to version {version}"
        clients.get("lambda").update_alias(FunctionName=p.function_name, Name=p.alias_name, FunctionVersion=version)
        return f"pointed {what} at version {version}"
