"""REMEDIATING and ROLLING_BACK: a function's timeout, memory size or ephemeral storage set."""

from __future__ import annotations

from typing import Any

from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import UpdateFunctionConfigurationParams
from incident_responder.remediation.changes.base import _Change


class _FunctionConfiguration(_Change):
    # The ledger records EphemeralStorage as its size in MB; the API takes and returns {"Size": MB}.
    FIELDS = (("timeout", "Timeout"), ("memory_size", "MemorySize"), ("ephemeral_storage", "EphemeralStorage"))

    def resources(self, p: UpdateFunctionConfigurationParams) -> list[str]:
        return [f"function:{p.function_name}"]

    def satisfied(self, p: UpdateFunctionConfigurationParams, state: dict[str, Any]) -> bool:
        return all(state.get(api) == getattr(p, field) for field, api in self.FIELDS if getattr(p, field) is not None)

    def capture(self, clients: AwsClients, p: UpdateFunctionConfigurationParams) -> dict[str, Any]:
        config = clients.get("lambda").get_function_configuration(FunctionName=p.function_name)
        config = {**config, "EphemeralStorage": (config.get("EphemeralStorage") or {}).get("Size", 512)}
        # Only what the action changes: a field it leaves alone is not its to put back.
        return {"function_name": p.function_name} | {
            api: config[api] for field, api in self.FIELDS if getattr(p, field) is not None
        }

    def apply(self, clients: AwsClients, p: UpdateFunctionConfigurationParams) -> str:
        changes = {api: getattr(p, field) for field, api in self.FIELDS if getattr(p, field) is not None}
        self._update(clients, p.function_name, changes)
        return f"set {', '.join(f'{k} {v}' for k, v in changes.items())} on {p.function_name}"

    def restore(self, clients: AwsClients, p: UpdateFunctionConfigurationParams, prior: dict[str, Any]) -> None:
        self._update(clients, p.function_name, {api: prior[api] for _, api in self.FIELDS if api in prior})

    @staticmethod
    def _update(clients: AwsClients, function_name: str, changes: dict[str, Any]) -> None:
        lam = clients.get("lambda")
        waiter = {"FunctionName": function_name, "WaiterConfig": {"Delay": 2, "MaxAttempts": 30}}
        # Lambda applies configuration asynchronously and refuses a change while another is pending.
        lam.get_waiter("function_updated").wait(**waiter)
        if "EphemeralStorage" in changes:
            changes = {**changes, "EphemeralStorage": {"Size": changes["EphemeralStorage"]}}
        lam.update_function_configuration(FunctionName=function_name, **changes)
        lam.get_waiter("function_updated").wait(**waiter)
