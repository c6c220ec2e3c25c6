"""Fault injection: the function a fault is injected into: its clients, its configuration, its event source
mappings, and where the originals of what is changed are kept."""

from __future__ import annotations

import time
from typing import Any

from chaos.errors import ChaosError
from chaos.snapshots import SnapshotStore
from incident_responder.core.aws import AwsClients


class FaultTarget:
    """One function's account state, as every chaos kind reads and changes it."""

    def __init__(self, clients: AwsClients, function_name: str, store: SnapshotStore):
        self.clients = clients
        self.function_name = function_name
        self.store = store

    @property
    def lambda_client(self) -> Any:
        return self.clients.get("lambda")

    def refuse_if_aliased(self, why: str) -> None:
        """ChaosError when callers invoke the function through an alias: its published version keeps its code and
        configuration, so a change to $LATEST reaches them only with a new version (``why`` says what would not)."""
        aliases = self.lambda_client.list_aliases(FunctionName=self.function_name)["Aliases"]
        if aliases:
            raise ChaosError(f"{self.function_name} is invoked through an alias ({aliases[0]['Name']}){why}")

    def config(self) -> dict[str, Any]:
        return self.lambda_client.get_function_configuration(FunctionName=self.function_name)

    def variables(self) -> dict[str, str]:
        """A copy of the function's environment variables."""
        return dict((self.config().get("Environment") or {}).get("Variables") or {})

    def update_config(self, **changes: Any) -> None:
        self.lambda_client.update_function_configuration(FunctionName=self.function_name, **changes)
        self.wait_updated()

    def wait_updated(self) -> None:
        # Real Lambda applies code and configuration asynchronously; later changes fail while one is pending.
        self.lambda_client.get_waiter("function_updated").wait(
            FunctionName=self.function_name, WaiterConfig={"Delay": 2, "MaxAttempts": 60}
        )

    def restore_variable(self, name: str, original: Any) -> str:
        """Put one environment variable back to ``original`` (the slot ``env.<name>``)."""
        variables = self.variables()
        variables[name] = original
        self.update_config(Environment={"Variables": variables})
        return f"environment variable {name} restored"

    def mappings(self) -> list[dict[str, Any]]:
        """The event source mappings that invoke the function."""
        return [
            mapping
            for page in self.lambda_client.get_paginator("list_event_source_mappings").paginate(
                FunctionName=self.function_name
            )
            for mapping in page["EventSourceMappings"]
        ]

    def sqs_sources(self) -> list[str]:
        """The ARNs of the SQS queues the function's mappings read."""
        return [m["EventSourceArn"] for m in self.mappings() if ":sqs:" in m.get("EventSourceArn", "")]

    def wait_mapping(self, uuid: str) -> None:
        """Mappings change state asynchronously; another update fails while one is under way."""
        for _ in range(60):
            if self.lambda_client.get_event_source_mapping(UUID=uuid).get("State") in ("Enabled", "Disabled"):
                return
            time.sleep(1)
