"""no_route_to_internet: the function is moved to a subnet of its VPC whose route table leads nowhere out (catalogue
entry no-route-to-internet)."""

from __future__ import annotations

from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ChaosKind, KindParameters
from chaos.kinds.invalid_subnet_or_security_group import _free_cidr
from chaos.target import FaultTarget
from incident_responder.account.network import read_network
from incident_responder.core.contracts import FaultType


class NoRouteToInternet(KindParameters):
    """A new subnet of the function's VPC, on the VPC's main route table (the local route only), replaces its
    subnets: no NAT gateway, no internet gateway, no VPC endpoint on its path."""

    kind: Literal["no_route_to_internet"]


class NoRouteToInternetKind(ChaosKind[NoRouteToInternet]):
    """Move the function to a subnet with no route out of its VPC."""

    parameters = NoRouteToInternet
    fault_type = FaultType.VPC_MISCONFIGURED
    workloads = frozenset({DATA_PROCESSOR})
    refusal = "not attached to a VPC"
    slots = ("routeless_subnet",)
    help = "move the function to a subnet of its VPC with no route out (no NAT gateway, no endpoint)"

    def inject(self, target: FaultTarget, params: NoRouteToInternet) -> list[str]:
        vpc = target.config().get("VpcConfig") or {}
        network = read_network(target.clients, vpc)
        if not network.in_vpc or not network.vpc_id:
            raise ChaosError(f"{target.function_name} is not attached to a VPC: it has no route to lose")
        ec2 = target.clients.get("ec2")
        created = ec2.create_subnet(VpcId=network.vpc_id, CidrBlock=_free_cidr(ec2, network.vpc_id))["Subnet"]
        original = {"SubnetIds": list(vpc["SubnetIds"]), "SecurityGroupIds": list(vpc["SecurityGroupIds"])}
        target.store.remember("routeless_subnet", {"vpc_config": original, "subnet_id": created["SubnetId"]})
        target.update_config(VpcConfig={**original, "SubnetIds": [created["SubnetId"]]})
        target.store.record_fault({"kind": "no_route_to_internet"})
        return [f"VpcConfig moved to subnet {created['SubnetId']} ({created['CidrBlock']}), which has no route out"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        target.update_config(VpcConfig=original["vpc_config"])
        target.clients.get("ec2").delete_subnet(SubnetId=original["subnet_id"])
        return f"VpcConfig restored (subnets {original['vpc_config']['SubnetIds']}), subnet {original['subnet_id']} deleted"
