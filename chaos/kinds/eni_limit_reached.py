"""eni_limit_reached: the function's VPC holds as many network interfaces as Lambda's quota allows (catalogue entry
eni-limit-reached)."""

from __future__ import annotations

from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ChaosKind, KindParameters
from chaos.kinds.invalid_subnet_or_security_group import _free_cidr
from chaos.kinds.subnet_out_of_addresses import fill
from chaos.target import FaultTarget
from incident_responder.account.network import VPC_NETWORK_INTERFACE_QUOTA, count_vpc_network_interfaces, read_network
from incident_responder.core.contracts import FaultType


class EniLimitReached(KindParameters):
    """Other workloads' network interfaces, in a subnet of their own, fill the VPC up to the quota."""

    kind: Literal["eni_limit_reached"]


class EniLimitReachedKind(ChaosKind[EniLimitReached]):
    """Fill the function's VPC with network interfaces up to Lambda's default quota (250 per VPC)."""

    parameters = EniLimitReached
    fault_type = FaultType.VPC_CAPACITY_EXHAUSTED
    workloads = frozenset({DATA_PROCESSOR})
    refusal = "not attached to a VPC"
    slots = ("vpc_fillers",)
    help = "fill the function's VPC with other network interfaces up to Lambda's quota"

    def inject(self, target: FaultTarget, params: EniLimitReached) -> list[str]:
        network = read_network(target.clients, target.config().get("VpcConfig"))
        if not network.in_vpc or not network.vpc_id:
            raise ChaosError(f"{target.function_name} is not attached to a VPC: it has no VPC to fill")
        ec2 = target.clients.get("ec2")
        wanted = VPC_NETWORK_INTERFACE_QUOTA - count_vpc_network_interfaces(target.clients, network.vpc_id)
        cidr = _free_cidr(ec2, network.vpc_id).replace("/28", "/24")
        subnet = ec2.create_subnet(VpcId=network.vpc_id, CidrBlock=cidr)["Subnet"]["SubnetId"]
        created = []
        for _ in range(max(0, wanted)):  # one address each: the count is what the quota limits
            created += fill(target, subnet, 1, "container tasks")
        target.store.remember("vpc_fillers", {"subnet_id": subnet, "interfaces": created})
        target.store.record_fault({"kind": "eni_limit_reached"})
        return [f"{len(created)} network interface(s) in {subnet} fill {network.vpc_id} to the quota"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        ec2 = target.clients.get("ec2")
        for eni in original["interfaces"]:
            ec2.delete_network_interface(NetworkInterfaceId=eni)
        ec2.delete_subnet(SubnetId=original["subnet_id"])
        return f"{len(original['interfaces'])} network interface(s) and subnet {original['subnet_id']} deleted"
