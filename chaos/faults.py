"""The injector: any chaos kind of the registry (:mod:`chaos.kinds`) injected into one function, a scenario's
faults applied in order, and restore.

Each kind reads the function's current state (role, key, mappings, table from the function, never assumed),
records the original of every slot it is about to change, then changes it. Slots: ``iam.inline.<policy>``,
``iam.attached.<arn>``, ``concurrency``, ``timeout``, ``memory``, ``sg.<group>.egress``,
``nacl.<acl>.egress.<rule>``, ``alias.<name>`` (the version it routed to), ``kms.<key id>`` (the key's state),
``esm.<uuid>`` (the mapping's state), ``load.<table>`` (the table's write load before another writer overloaded
it), ``env.<name>``, ``secret.<arn>``, ``queue.<arn>``, ``storage``, ``keypolicy.<key id>``,
``neighbor.<function>``.

A kind that does not apply to the function (no VPC, no alias, no customer-managed key, no event source mapping,
no table) raises :class:`ChaosError` before changing anything.

    >>> injector.inject("throttle", reserved_concurrency=0)  # doctest: +SKIP
    >>> injector.throttle(0)                                  # doctest: +SKIP  (the same: each kind by name)
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from chaos.errors import ChaosError
from chaos.kinds import KINDS, KindParameters, kind_named, kind_of_slot
from chaos.snapshots import SnapshotStore, default_state_dir
from chaos.target import FaultTarget
from incident_responder.account.names import function_name_of
from incident_responder.core.aws import AwsClients


class FaultInjector(FaultTarget):
    """Injects faults into one function's account state and restores them."""

    def __init__(self, clients: AwsClients, function_name: str, store: SnapshotStore):
        super().__init__(clients, function_name_of(function_name), store)

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
    def inject(self, kind: str, *args: Any, **params: Any) -> list[str]:
        """Inject ``kind`` with its parameters as given (positional in the scenario model's order, or by name;
        left out: the kind's defaults); the kind's own checks judge them."""
        chaos_kind = kind_named(kind)
        return chaos_kind.inject(self, chaos_kind.parameters_of(*args, **params))

    def apply(self, fault: KindParameters) -> list[str]:
        """Apply one fault from a scenario file."""
        return kind_named(fault.kind).inject(self, fault)

    def __getattr__(self, name: str) -> Callable[..., list[str]]:
        # Each kind by name, as a method: ``injector.timeout(1)``, ``injector.iam_revoke(target="s3")``.
        if name in KINDS:
            return partial(self.inject, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- restore ---------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        return {"function": self.function_name, "faults": list(self.store.faults), "slots": dict(self.store.slots)}

    def restore(self) -> list[str]:
        """Put back every recorded original, newest first; each slot is forgotten once restored."""
        done = []
        for slot in reversed(list(self.store.slots)):
            kind = kind_of_slot(slot)
            if kind is None:
                raise ChaosError(f"unknown snapshot slot {slot!r}")
            done.append(kind.restore(self, slot, self.store.original(slot)))
            self.store.forget(slot)
        return done or ["nothing to restore"]
