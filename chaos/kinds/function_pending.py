"""function_pending: Lambda's creation of the function's network interfaces does not end, and the function stays
Pending (catalogue entry function-pending). Lab only: what holds Lambda's own work is AWS's side."""

from __future__ import annotations

from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ChaosKind, KindParameters
from chaos.lambda_service import hold
from chaos.target import FaultTarget
from incident_responder.account.network import read_network
from incident_responder.core.contracts import FaultType


class FunctionPending(KindParameters):
    """The function is Pending (StateReasonCode Creating) and stays so."""

    kind: Literal["function_pending"]


class FunctionPendingKind(ChaosKind[FunctionPending]):
    """The lab's Lambda holds the function Pending, as while it creates a VPC function's network interfaces."""

    parameters = FunctionPending
    fault_type = FaultType.FUNCTION_NOT_READY
    workloads = frozenset({DATA_PROCESSOR})
    refusal = "not attached to a VPC"
    slots = ("pending",)
    help = "hold the function Pending, as while Lambda creates its network interfaces (lab only)"

    def inject(self, target: FaultTarget, params: FunctionPending) -> list[str]:
        if not read_network(target.clients, target.config().get("VpcConfig")).in_vpc:
            raise ChaosError(f"{target.function_name} is not attached to a VPC: Lambda creates no interfaces for it")
        target.store.remember("pending", None)
        hold(target, "creation_stuck")
        target.store.record_fault({"kind": "function_pending"})
        return [f"Lambda holds {target.function_name} Pending (StateReasonCode Creating)"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        hold(target, original)
        return f"{target.function_name} is Active again"
