"""esm_disable: the event source mappings that invoke the function are disabled (its queue is no longer read)."""

from __future__ import annotations

from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


class EsmDisable(KindParameters):
    """The function's event source mapping is disabled: its queue is no longer read."""

    kind: Literal["esm_disable"]


class EsmDisableKind(ChaosKind[EsmDisable]):
    """Disable every event source mapping that invokes the function."""

    parameters = EsmDisable
    fault_type = FaultType.EVENT_SOURCE_DISABLED
    workloads = frozenset({QUEUE_CONSUMER})
    refusal = "no event source mappings"
    slots = ("esm",)  # esm.<uuid>: the mapping's state
    help = "disable the event source mappings that invoke the function"

    def inject(self, target: FaultTarget, params: EsmDisable) -> list[str]:
        mappings = target.mappings()
        if not mappings:
            raise ChaosError(f"{target.function_name} has no event source mappings: no queue or stream invokes it")
        changes = []
        for mapping in mappings:
            uuid, state = mapping["UUID"], mapping.get("State")
            target.store.remember(f"esm.{uuid}", state)
            if state in ("Disabled", "Disabling"):
                changes.append(f"event source mapping {uuid} is already {state.lower()}")
                continue
            target.lambda_client.update_event_source_mapping(UUID=uuid, Enabled=False)
            target.wait_mapping(uuid)
            changes.append(f"disabled event source mapping {uuid} ({mapping.get('EventSourceArn')})")
        target.store.record_fault({"kind": "esm_disable"})
        return changes

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        uuid = slot.removeprefix("esm.")
        enabled = original in ("Enabled", "Enabling")
        target.lambda_client.update_event_source_mapping(UUID=uuid, Enabled=enabled)
        target.wait_mapping(uuid)
        return f"event source mapping {uuid} {'enabled' if enabled else 'disabled'} again"
