"""ec2_throttled_during_setup: Amazon EC2 throttles the calls Lambda makes with the function's execution role to set
up its network interfaces (catalogue entry ec2-throttled-during-setup). Lab only: EC2's request rate is AWS's side."""

from __future__ import annotations

from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ChaosKind, KindParameters
from chaos.lambda_service import hold
from chaos.target import FaultTarget
from incident_responder.account.network import read_network
from incident_responder.core.contracts import FaultType


class Ec2ThrottledDuringSetup(KindParameters):
    """EC2 throttles Lambda's network interface calls for the function while the kind holds."""

    kind: Literal["ec2_throttled_during_setup"]


class Ec2ThrottledDuringSetupKind(ChaosKind[Ec2ThrottledDuringSetup]):
    """The lab's EC2 throttles what Lambda calls with the function's role when it recreates its interfaces."""

    parameters = Ec2ThrottledDuringSetup
    fault_type = FaultType.FUNCTION_NOT_READY
    workloads = frozenset({DATA_PROCESSOR})
    refusal = "not attached to a VPC"
    slots = ("ec2_throttling",)
    help = "have EC2 throttle Lambda's network interface calls for the function (lab only)"

    def inject(self, target: FaultTarget, params: Ec2ThrottledDuringSetup) -> list[str]:
        if not read_network(target.clients, target.config().get("VpcConfig")).in_vpc:
            raise ChaosError(f"{target.function_name} is not attached to a VPC: Lambda calls EC2 for nothing of it")
        target.store.remember("ec2_throttling", None)
        hold(target, "ec2_throttled")
        target.store.record_fault({"kind": "ec2_throttled_during_setup"})
        return [f"EC2 throttles Lambda's network interface calls for {target.function_name}"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        hold(target, original)
        return f"EC2 no longer throttles Lambda's calls for {target.function_name}"
