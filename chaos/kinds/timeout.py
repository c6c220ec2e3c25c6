"""timeout: the function's timeout lowered below what an invocation takes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ORDERS_API, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


class Timeout(KindParameters):
    kind: Literal["timeout"]
    seconds: int = Field(ge=1, le=900)


class TimeoutKind(ChaosKind[Timeout]):
    """Lower the function's timeout."""

    parameters = Timeout
    fault_type = FaultType.TIMEOUT
    workloads = frozenset({DATA_PROCESSOR, ORDERS_API, QUEUE_CONSUMER})
    slots = ("timeout",)
    help = "lower the function timeout"
    defaults = {"seconds": 1}
    example = {"seconds": 1}

    def inject(self, target: FaultTarget, params: Timeout) -> list[str]:
        seconds = params.seconds
        if not 1 <= seconds <= 900:
            raise ChaosError("timeout seconds must be between 1 and 900")
        target.store.remember("timeout", target.config()["Timeout"])
        target.update_config(Timeout=seconds)
        target.store.record_fault({"kind": "timeout", "seconds": seconds})
        return [f"timeout set to {seconds} s"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        target.update_config(Timeout=original)
        return f"timeout restored to {original} s"
