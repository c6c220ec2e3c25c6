"""REMEDIATING and ROLLING_BACK: a function's reserved concurrency set, or removed."""

from __future__ import annotations

from typing import Any

from incident_responder.account.state import read_reserved_concurrency
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import UpdateConcurrencyParams
from incident_responder.remediation.changes.base import _Change


class _Concurrency(_Change):
    def resources(self, p: UpdateConcurrencyParams) -> list[str]:
        return [f"function:{p.function_name}"]

    def satisfied(self, p: UpdateConcurrencyParams, state: dict[str, Any]) -> bool:
        return state["reserved_concurrent_executions"] == p.reserved_concurrent_executions

    def capture(self, clients: AwsClients, p: UpdateConcurrencyParams) -> dict[str, Any]:
        return {
            "function_name": p.function_name,
            "reserved_concurrent_executions": read_reserved_concurrency(clients, p.function_name),
        }

    def apply(self, clients: AwsClients, p: UpdateConcurrencyParams) -> str:
        return self._set(clients, p.function_name, p.reserved_concurrent_executions)

    def restore(self, clients: AwsClients, p: UpdateConcurrencyParams, prior: dict[str, Any]) -> None:
        self._set(clients, p.function_name, prior["reserved_concurrent_executions"])

    @staticmethod
    def _set(clients: AwsClients, function_name: str, value: int | None) -> str:
        lam = clients.get("lambda")
        if value is None:
            lam.delete_function_concurrency(FunctionName=function_name)
            return f"removed the reserved concurrency of {function_name}"
        lam.put_function_concurrency(FunctionName=function_name, ReservedConcurrentExecutions=value)
        return f"set the reserved concurrency of {function_name} to {value}"
