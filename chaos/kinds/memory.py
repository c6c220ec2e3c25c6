"""memory: the function's memory size lowered below what an invocation needs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ORDERS_API, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


class Memory(KindParameters):
    kind: Literal["memory"]
    mb: int = Field(ge=128, le=10240)


class MemoryKind(ChaosKind[Memory]):
    """Lower the function's memory size."""

    parameters = Memory
    fault_type = FaultType.MEMORY_EXHAUSTION
    workloads = frozenset({DATA_PROCESSOR, ORDERS_API, QUEUE_CONSUMER})
    slots = ("memory",)
    help = "lower the function memory size"
    defaults = {"mb": 128}
    example = {"mb": 128}

    def inject(self, target: FaultTarget, params: Memory) -> list[str]:
        mb = params.mb
        if not 128 <= mb <= 10240:
            raise ChaosError("memory must be between 128 and 10240 MB")
        target.store.remember("memory", target.config()["MemorySize"])
        target.update_config(MemorySize=mb)
        target.store.record_fault({"kind": "memory", "mb": mb})
        return [f"memory size set to {mb} MB"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        target.update_config(MemorySize=original)
        return f"memory size restored to {original} MB"
