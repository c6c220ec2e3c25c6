"""invalid_subnet_or_security_group: the function's VPC configuration names a security group (or subnet) that no
longer exists (catalogue entry invalid-subnet-or-security-group)."""

from __future__ import annotations

from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.account.network import read_network
from incident_responder.core.contracts import FaultType


class InvalidSubnetOrSecurityGroup(KindParameters):
    """The function is moved to a new security group (or subnet) of its VPC, which is then deleted."""

    kind: Literal["invalid_subnet_or_security_group"]
    resource: Literal["security_group", "subnet"] = "security_group"


def _free_cidr(ec2: Any, vpc_id: str) -> str:
    """A /28 of the VPC's first /16 that no subnet uses."""
    vpc = ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"][0]
    base = vpc["CidrBlock"].split("/")[0].rsplit(".", 2)[0]
    used = {s["CidrBlock"] for s in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Subnets"]}
    for third in range(250, 0, -1):
        cidr = f"{base}.{third}.0/28"
        if not any(u.startswith(f"{base}.{third}.") for u in used):
            return cidr
    raise ChaosError(f"no free address range in {vpc_id} for a subnet")


class InvalidSubnetOrSecurityGroupKind(ChaosKind[InvalidSubnetOrSecurityGroup]):
    """Point the function's VpcConfig at a security group (or subnet) that is then deleted."""

    parameters = InvalidSubnetOrSecurityGroup
    fault_type = FaultType.VPC_MISCONFIGURED
    workloads = frozenset({DATA_PROCESSOR})
    refusal = "not attached to a VPC"
    slots = ("vpc_config",)
    help = "point the function's VpcConfig at a security group or subnet that no longer exists"
    defaults = {"resource": "security_group"}
    argument_help = {"resource": "what the VpcConfig names that is deleted: security_group (default) or subnet"}
    example = {"resource": "subnet"}

    def inject(self, target: FaultTarget, params: InvalidSubnetOrSecurityGroup) -> list[str]:
        vpc = target.config().get("VpcConfig") or {}
        network = read_network(target.clients, vpc)
        if not network.in_vpc or not network.vpc_id:
            raise ChaosError(f"{target.function_name} is not attached to a VPC: it names no subnet or group")
        original = {"SubnetIds": list(vpc["SubnetIds"]), "SecurityGroupIds": list(vpc["SecurityGroupIds"])}
        target.store.remember("vpc_config", original)
        ec2 = target.clients.get("ec2")
        if params.resource == "security_group":
            created = ec2.create_security_group(
                GroupName=f"{target.function_name}-replacement-sg",
                Description=f"{target.function_name} replacement",
                VpcId=network.vpc_id,
            )["GroupId"]
            target.update_config(VpcConfig={**original, "SecurityGroupIds": [created]})
            ec2.delete_security_group(GroupId=created)
        else:
            created = ec2.create_subnet(VpcId=network.vpc_id, CidrBlock=_free_cidr(ec2, network.vpc_id))["Subnet"][
                "SubnetId"
            ]
            target.update_config(VpcConfig={**original, "SubnetIds": [created]})
            ec2.delete_subnet(SubnetId=created)
        target.store.record_fault({"kind": "invalid_subnet_or_security_group", "resource": params.resource})
        return [f"VpcConfig now names {params.resource.replace('_', ' ')} {created}, since deleted"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        target.update_config(VpcConfig=original)
        return f"VpcConfig restored (subnets {original['SubnetIds']}, groups {original['SecurityGroupIds']})"
