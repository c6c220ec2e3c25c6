"""ephemeral_storage: the function's /tmp shrinks below what it stages there."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ORDERS_API, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


class EphemeralStorage(KindParameters):
    """The function's /tmp shrinks to ``mb``."""

    kind: Literal["ephemeral_storage"]
    mb: int = Field(ge=512, le=10240)


class EphemeralStorageKind(ChaosKind[EphemeralStorage]):
    """Shrink the function's /tmp (ephemeral storage)."""

    parameters = EphemeralStorage
    fault_type = FaultType.STORAGE_EXHAUSTION
    workloads = frozenset({DATA_PROCESSOR, ORDERS_API, QUEUE_CONSUMER})
    slots = ("storage",)
    help = "shrink the function's /tmp"
    example = {"mb": 512}

    def inject(self, target: FaultTarget, params: EphemeralStorage) -> list[str]:
        mb = params.mb
        if not 512 <= mb <= 10240:
            raise ChaosError("ephemeral storage must be between 512 and 10240 MB")
        target.store.remember("storage", (target.config().get("EphemeralStorage") or {}).get("Size", 512))
        target.update_config(EphemeralStorage={"Size": mb})
        target.store.record_fault({"kind": "ephemeral_storage", "mb": mb})
        return [f"ephemeral storage set to {mb} MB"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        target.update_config(EphemeralStorage={"Size": original})
        return f"ephemeral storage restored to {original} MB"
