"""The faults: iam_revoke, throttle, network_block, timeout, memory, bad_deploy, kms_disable,
esm_disable, downstream_throttle; and restore.

Each fault reads the function's current state (role, key, mappings, table from the function, never
assumed), records the original of every slot it is about to change, then changes it. Slots:
``iam.inline.<policy>``, ``iam.attached.<arn>``, ``concurrency``, ``timeout``, ``memory``,
``sg.<group>.egress``, ``nacl.<acl>.egress.<rule>``, ``alias.<name>`` (the version it routed to),
``kms.<key id>`` (the key's state), ``esm.<uuid>`` (the mapping's state), ``load.<table>`` (the
table's write load before another writer overloaded it).

A kind that does not apply to the function (no VPC, no alias, no customer-managed key, no event
source mapping, no table) raises :class:`ChaosError` before changing anything.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chaos.code import CodeFaults
from chaos.configuration import ConfigurationFaults
from chaos.dependencies import DependencyFaults
from chaos.errors import ChaosError
from chaos.event_sources import EventSourceFaults
from chaos.keys import KeyFaults
from chaos.network import NetworkFaults
from chaos.permissions import PermissionFaults
from chaos.snapshots import SnapshotStore, default_state_dir
from incident_responder.account.environment import read_secrets
from incident_responder.account.event_sources import read_queue_url
from incident_responder.account.names import function_name_of
from incident_responder.core.aws import AwsClients
from incident_responder.lab.concurrency import publish_concurrency
from incident_responder.lab.scenario import Fault


class FaultInjector(
    PermissionFaults,
    NetworkFaults,
    ConfigurationFaults,
    CodeFaults,
    KeyFaults,
    EventSourceFaults,
    DependencyFaults,
):
    """Injects faults into one function's account state and restores them."""

    def __init__(self, clients: AwsClients, function_name: str, store: SnapshotStore):
        self.clients = clients
        self.function_name = function_name_of(function_name)
        self.store = store

    @classmethod
    def for_function(
        cls, function_name: str, clients: AwsClients | None = None, state_dir: Path | None = None
    ) -> FaultInjector:
        clients = clients or AwsClients()
        name = function_name_of(function_name)
        arn = clients.get("lambda").get_function_configuration(FunctionName=name)["FunctionArn"]
        store = SnapshotStore.for_target(
            state_dir or default_state_dir(), clients.endpoint_url, arn.split(":")[4], clients.region, name
        )
        return cls(clients, name, store)

    # -- faults ----------------------------------------------------------------------------------
    def apply(self, fault: Fault) -> list[str]:
        """Apply one fault from a scenario file."""
        params = fault.model_dump(exclude={"kind"})
        return getattr(self, fault.kind)(**params)

    # -- restore ---------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        return {"function": self.function_name, "faults": list(self.store.faults), "slots": dict(self.store.slots)}

    def restore(self) -> list[str]:
        """Put back every recorded original, newest first; each slot is forgotten once restored."""
        done = []
        for slot in reversed(list(self.store.slots)):
            done.append(self._restore_slot(slot, self.store.original(slot)))
            self.store.forget(slot)
        return done or ["nothing to restore"]

    def _restore_slot(self, slot: str, original: Any) -> str:
        kind, _, rest = slot.partition(".")
        if kind == "iam":
            return self._restore_iam(rest, original)
        if kind == "concurrency":
            if original is None:
                self._lambda.delete_function_concurrency(FunctionName=self.function_name)
                return "reserved concurrency removed (none was set)"
            self._lambda.put_function_concurrency(
                FunctionName=self.function_name, ReservedConcurrentExecutions=original
            )
            return f"reserved concurrency restored to {original}"
        if kind == "timeout":
            self._update_config(Timeout=original)
            return f"timeout restored to {original} s"
        if kind == "memory":
            self._update_config(MemorySize=original)
            return f"memory size restored to {original} MB"
        if kind == "sg":
            return self._restore_group(rest.removesuffix(".egress"), original or [])
        if kind == "nacl":
            return self._restore_nacl(rest, original)
        if kind == "alias":
            # Only the alias moves back (a rollback): the newer version stays published, as in a real account.
            version = original["function_version"]
            self._lambda.update_alias(FunctionName=self.function_name, Name=rest, FunctionVersion=version)
            return f"alias {rest} routes to version {version} again"
        if kind == "kms":
            return self._restore_key(rest, original)
        if kind == "esm":
            enabled = original in ("Enabled", "Enabling")
            self._lambda.update_event_source_mapping(UUID=rest, Enabled=enabled)
            self._wait_mapping(rest)
            return f"event source mapping {rest} {'enabled' if enabled else 'disabled'} again"
        if kind == "env":
            variables = dict((self._config().get("Environment") or {}).get("Variables") or {})
            variables[rest] = original
            self._update_config(Environment={"Variables": variables})
            return f"environment variable {rest} restored"
        if kind == "secret":
            current = next(iter(read_secrets(self.clients, {"_": rest})), None)
            if current is not None and current.deleted_date and not original:
                self.clients.get("secretsmanager").restore_secret(SecretId=rest)
                return f"secret {rest}: deletion cancelled"
            return f"secret {rest}: nothing to cancel"
        if kind == "queue":
            self.clients.get("sqs").set_queue_attributes(
                QueueUrl=read_queue_url(self.clients, rest), Attributes={"VisibilityTimeout": str(original)}
            )
            return f"queue {rest.rsplit(':', 1)[-1]}: visibility timeout restored to {original} s"
        if kind == "storage":
            self._update_config(EphemeralStorage={"Size": original})
            return f"ephemeral storage restored to {original} MB"
        if kind == "keypolicy":
            self.clients.get("kms").put_key_policy(KeyId=rest, PolicyName="default", Policy=json.dumps(original))
            return f"key {rest}: key policy restored"
        if kind == "neighbor":
            publish_concurrency(self.clients, rest, 0.0)
            if original.get("created"):
                self._lambda.delete_function(FunctionName=rest)
                return f"function {rest} is idle again, and deleted"
            return f"function {rest} is idle again"
        if kind == "load":
            # A datapoint cannot be taken back: a later one says the other writer is back to its usual load.
            units = original["consumed_write_capacity_units"]
            self._put_write_load(rest, units, self._after(self._latest_write_load(rest)))
            return f"table {rest}: the other writer's load is back to {units / 60:g} write units/s"
        raise ChaosError(f"unknown snapshot slot {slot!r}")
