"""Fault injection: the function a fault is injected into: its clients, its configuration, and where the originals of
what is changed are kept."""

from __future__ import annotations

from typing import Any

from chaos.snapshots import SnapshotStore
from incident_responder.core.aws import AwsClients


class FaultTarget:
    """One function's account state, as every fault reads and changes it."""

    clients: AwsClients
    function_name: str
    store: SnapshotStore

    @property
    def _lambda(self) -> Any:
        return self.clients.get("lambda")

    def _config(self) -> dict[str, Any]:
        return self._lambda.get_function_configuration(FunctionName=self.function_name)

    def _update_config(self, **changes: Any) -> None:
        self._lambda.update_function_configuration(FunctionName=self.function_name, **changes)
        # Real Lambda applies configuration asynchronously; later changes fail while one is pending.
        self._lambda.get_waiter("function_updated").wait(
            FunctionName=self.function_name, WaiterConfig={"Delay": 2, "MaxAttempts": 60}
        )
