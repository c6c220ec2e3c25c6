"""Every stage: a function's network path as read (its security groups' egress rules, its subnets' NACLs)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from incident_responder.core.aws import AwsClients


class SecurityGroupEgress(BaseModel):
    group_id: str
    group_name: str | None = None
    vpc_id: str | None = None
    egress_rules: list[dict[str, Any]] = Field(
        default_factory=list, description="IpPermissionsEgress as EC2 returns them"
    )


class SubnetNetworkAcl(BaseModel):
    subnet_id: str
    network_acl_id: str | None = None
    is_default_acl: bool | None = None
    entries: list[dict[str, Any]] = Field(
        default_factory=list, description="NACL entries (ingress and egress), ordered by rule number"
    )


class NetworkState(BaseModel):
    in_vpc: bool
    vpc_id: str | None = None
    security_groups: list[SecurityGroupEgress] = Field(default_factory=list)
    subnets: list[SubnetNetworkAcl] = Field(default_factory=list)


def _sorted_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(entries, key=lambda e: (bool(e.get("Egress")), int(e.get("RuleNumber", 0))))


def read_network(clients: AwsClients, vpc_config: dict[str, Any] | None) -> NetworkState:
    subnet_ids = list((vpc_config or {}).get("SubnetIds") or [])
    group_ids = list((vpc_config or {}).get("SecurityGroupIds") or [])
    if not subnet_ids and not group_ids:
        return NetworkState(in_vpc=False)
    ec2 = clients.get("ec2")
    groups = []
    vpc_id = None
    if group_ids:
        for group in ec2.describe_security_groups(GroupIds=group_ids)["SecurityGroups"]:
            vpc_id = vpc_id or group.get("VpcId")
            groups.append(
                SecurityGroupEgress(
                    group_id=group["GroupId"],
                    group_name=group.get("GroupName"),
                    vpc_id=group.get("VpcId"),
                    egress_rules=group.get("IpPermissionsEgress", []),
                )
            )
    subnets = []
    if subnet_ids:
        described = {s["SubnetId"]: s for s in ec2.describe_subnets(SubnetIds=subnet_ids)["Subnets"]}
        acls = ec2.describe_network_acls(Filters=[{"Name": "association.subnet-id", "Values": subnet_ids}])
        acl_by_subnet = {}
        for acl in acls["NetworkAcls"]:
            for assoc in acl.get("Associations", []):
                acl_by_subnet[assoc["SubnetId"]] = acl
        for subnet_id in subnet_ids:
            subnet_vpc = described.get(subnet_id, {}).get("VpcId")
            vpc_id = vpc_id or subnet_vpc
            acl = acl_by_subnet.get(subnet_id)
            if acl is None and subnet_vpc:
                # A subnet without an explicit association uses its VPC's default NACL.
                defaults = ec2.describe_network_acls(
                    Filters=[{"Name": "vpc-id", "Values": [subnet_vpc]}, {"Name": "default", "Values": ["true"]}]
                )["NetworkAcls"]
                acl = defaults[0] if defaults else None
            subnets.append(
                SubnetNetworkAcl(
                    subnet_id=subnet_id,
                    network_acl_id=acl["NetworkAclId"] if acl else None,
                    is_default_acl=acl.get("IsDefault") if acl else None,
                    entries=_sorted_entries(acl.get("Entries", [])) if acl else [],
                )
            )
    return NetworkState(in_vpc=True, vpc_id=vpc_id, security_groups=groups, subnets=subnets)
