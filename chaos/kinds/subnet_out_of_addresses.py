"""subnet_out_of_addresses: the function's subnet has no free IP address left (catalogue entry
subnet-out-of-addresses)."""

from __future__ import annotations

from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.account.network import read_network, read_routing
from incident_responder.core.contracts import FaultType

# Addresses one network interface takes at most here: its primary and 49 secondary ones.
ADDRESSES_PER_INTERFACE = 50


class SubnetOutOfAddresses(KindParameters):
    """Other network interfaces take every free address of the function's first subnet."""

    kind: Literal["subnet_out_of_addresses"]


def fill(target: FaultTarget, subnet_id: str, addresses: int, description: str) -> list[str]:
    """Network interfaces in ``subnet_id`` taking ``addresses`` addresses; their ids."""
    ec2 = target.clients.get("ec2")
    created = []
    while addresses > 0:
        take = min(addresses, ADDRESSES_PER_INTERFACE)
        extra = {"SecondaryPrivateIpAddressCount": take - 1} if take > 1 else {}
        eni = ec2.create_network_interface(SubnetId=subnet_id, Description=description, **extra)["NetworkInterface"]
        created.append(eni["NetworkInterfaceId"])
        addresses -= take
    return created


class SubnetOutOfAddressesKind(ChaosKind[SubnetOutOfAddresses]):
    """Take every free address of the function's subnet with other network interfaces."""

    parameters = SubnetOutOfAddresses
    fault_type = FaultType.VPC_CAPACITY_EXHAUSTED
    workloads = frozenset({DATA_PROCESSOR})
    refusal = "not attached to a VPC"
    slots = ("subnet_fillers",)
    help = "take every free IP address of the function's subnet with other network interfaces"

    def inject(self, target: FaultTarget, params: SubnetOutOfAddresses) -> list[str]:
        network = read_network(target.clients, target.config().get("VpcConfig"))
        if not network.in_vpc or not network.subnets:
            raise ChaosError(f"{target.function_name} is not attached to a VPC: it has no subnet to fill")
        subnet = read_routing(target.clients, [network.subnets[0].subnet_id])[0]
        free = subnet.available_ip_address_count or 0
        created = fill(target, subnet.subnet_id, free, "batch workers")
        target.store.remember("subnet_fillers", created)
        target.store.record_fault({"kind": "subnet_out_of_addresses"})
        return [f"{len(created)} network interface(s) took the {free} free address(es) of {subnet.subnet_id}"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        ec2 = target.clients.get("ec2")
        for eni in original:
            ec2.delete_network_interface(NetworkInterfaceId=eni)
        return f"{len(original)} network interface(s) deleted"
