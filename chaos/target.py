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

    def add_layer(self, name: str, package: bytes) -> str:
        """Publish ``package`` as a layer version and add it after the function's own layers, remembering both
        (slots ``layers`` and ``layer_version``, undone by :meth:`restore_layer_slot`); its ARN."""
        config = self.config()
        layers = [layer["Arn"] for layer in config.get("Layers") or []]
        if len(layers) >= 5:
            raise ChaosError(f"{self.function_name} already has 5 layers, the most a function can have")
        published = self.lambda_client.publish_layer_version(
            LayerName=name, Content={"ZipFile": package}, CompatibleRuntimes=[config["Runtime"]]
        )
        arn = published["LayerVersionArn"]
        self.store.remember("layers", layers)
        self.store.remember("layer_version", arn)
        self.update_config(Layers=[*layers, arn])
        return arn

    def restore_layer_slot(self, slot: str, original: Any) -> str:
        """Undo :meth:`add_layer`: the layer version deleted, the function's layers put back."""
        if slot == "layer_version":
            name, version = original.split(":")[6:8]
            self.lambda_client.delete_layer_version(LayerName=name, VersionNumber=int(version))
            return f"layer version {original} deleted"
        self.update_config(Layers=original)
        return f"layers restored to {original or 'none'}"

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
