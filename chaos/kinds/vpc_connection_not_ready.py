"""vpc_connection_not_ready: Lambda reclaimed the idle function's network interfaces and is slow to re-establish its
VPC connection (catalogue entry vpc-connection-not-ready). Lab only: Lambda's own work is AWS's side."""

from __future__ import annotations

from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ChaosKind, KindParameters
from chaos.lambda_service import hold
from chaos.target import FaultTarget
from incident_responder.account.network import read_network
from incident_responder.core.contracts import FaultType


class VpcConnectionNotReady(KindParameters):
    """The function is Inactive (StateReasonCode Idle); its VPC connection is not ready again while the kind holds."""

    kind: Literal["vpc_connection_not_ready"]


class VpcConnectionNotReadyKind(ChaosKind[VpcConnectionNotReady]):
    """The lab's Lambda reclaims the function's network interfaces and does not finish recreating them."""

    parameters = VpcConnectionNotReady
    fault_type = FaultType.FUNCTION_NOT_READY
    workloads = frozenset({DATA_PROCESSOR})
    refusal = "not attached to a VPC"
    slots = ("vpc_connection",)
    help = "reclaim the function's network interfaces, its VPC connection not ready again (lab only)"

    def inject(self, target: FaultTarget, params: VpcConnectionNotReady) -> list[str]:
        if not read_network(target.clients, target.config().get("VpcConfig")).in_vpc:
            raise ChaosError(f"{target.function_name} is not attached to a VPC: it has no VPC connection")
        target.store.remember("vpc_connection", None)
        hold(target, "vpc_connection_reclaimed")
        target.store.record_fault({"kind": "vpc_connection_not_ready"})
        return [f"Lambda reclaimed the network interfaces of {target.function_name} (Inactive, Idle)"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        hold(target, original)
        return f"{target.function_name}'s VPC connection is ready again (Active)"
