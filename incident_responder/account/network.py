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
    missing: list[str] = Field(
        default_factory=list,
        description="subnet and security group ids of the function's VpcConfig that EC2 does not know (deleted)",
    )


class SubnetRouting(BaseModel):
    """Where a subnet's traffic can leave the VPC, and how many addresses it has left."""

    subnet_id: str
    route_table_id: str | None = None
    route_out: str | None = Field(default=None, description="the NAT or internet gateway of its active default route")
    endpoints: list[str] = Field(default_factory=list, description="gateway VPC endpoints its route table routes to")
    available_ip_address_count: int | None = None

    @property
    def leads_out(self) -> bool:
        return self.route_out is not None or bool(self.endpoints)


def read_routing(clients: AwsClients, subnet_ids: list[str]) -> list[SubnetRouting]:
    """Each subnet's route table (its explicit association, else its VPC's main table): its active default route
    to a NAT or internet gateway, its gateway endpoints, and the subnet's free addresses (AvailableIpAddressCount)."""
    if not subnet_ids:
        return []
    ec2 = clients.get("ec2")
    described = {
        s["SubnetId"]: s for s in ec2.describe_subnets(Filters=[{"Name": "subnet-id", "Values": subnet_ids}])["Subnets"]
    }
    vpcs = sorted({s["VpcId"] for s in described.values() if s.get("VpcId")})
    tables = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": vpcs}])["RouteTables"] if vpcs else []
    explicit, main = {}, {}
    for table in tables:
        for assoc in table.get("Associations", []):
            if assoc.get("SubnetId"):
                explicit[assoc["SubnetId"]] = table
            elif assoc.get("Main"):
                main[table.get("VpcId")] = table
    out = []
    for subnet_id in subnet_ids:
        subnet = described.get(subnet_id)
        if subnet is None:
            continue
        table = explicit.get(subnet_id) or main.get(subnet.get("VpcId"))
        routes = [r for r in (table or {}).get("Routes", []) if r.get("State", "active") == "active"]
        default: dict[str, Any] = next((r for r in routes if r.get("DestinationCidrBlock") == "0.0.0.0/0"), {})
        gateway = default.get("NatGatewayId") or default.get("GatewayId")
        out.append(
            SubnetRouting(
                subnet_id=subnet_id,
                route_table_id=table.get("RouteTableId") if table else None,
                route_out=gateway if gateway and gateway.startswith(("nat-", "igw-")) else None,
                endpoints=sorted(
                    r["GatewayId"]
                    for r in routes
                    if r.get("DestinationPrefixListId") and str(r.get("GatewayId", "")).startswith("vpce-")
                ),
                available_ip_address_count=subnet.get("AvailableIpAddressCount"),
            )
        )
    return out


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
    missing: list[str] = []
    if group_ids:
        # By filter: a group that no longer exists is left out (and named missing), not an error.
        found = ec2.describe_security_groups(Filters=[{"Name": "group-id", "Values": group_ids}])["SecurityGroups"]
        missing += [g for g in group_ids if g not in {f["GroupId"] for f in found}]
        for group in sorted(found, key=lambda g: group_ids.index(g["GroupId"])):
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
        subnets_found = ec2.describe_subnets(Filters=[{"Name": "subnet-id", "Values": subnet_ids}])["Subnets"]
        described = {s["SubnetId"]: s for s in subnets_found}
        missing += [s for s in subnet_ids if s not in described]
        acls = ec2.describe_network_acls(Filters=[{"Name": "association.subnet-id", "Values": subnet_ids}])
        acl_by_subnet = {}
        for acl in acls["NetworkAcls"]:
            for assoc in acl.get("Associations", []):
                acl_by_subnet[assoc["SubnetId"]] = acl
        for subnet_id in [s for s in subnet_ids if s in described]:
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
    return NetworkState(in_vpc=True, vpc_id=vpc_id, security_groups=groups, subnets=subnets, missing=missing)


# Lambda's default quota of network interfaces per VPC (Service Quotas raises it).
VPC_NETWORK_INTERFACE_QUOTA = 250


def vpc_resolves_names(clients: AwsClients, vpc_id: str) -> bool:
    """Whether the VPC's Amazon-provided DNS server resolves host names (its enableDnsSupport attribute)."""
    answer = clients.get("ec2").describe_vpc_attribute(VpcId=vpc_id, Attribute="enableDnsSupport")
    return bool(answer["EnableDnsSupport"]["Value"])


def count_vpc_network_interfaces(clients: AwsClients, vpc_id: str) -> int:
    """The network interfaces in a VPC (what Lambda's per-VPC quota counts against)."""
    paginator = clients.get("ec2").get_paginator("describe_network_interfaces")
    pages = paginator.paginate(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
    return sum(len(page["NetworkInterfaces"]) for page in pages)


# Fewer free addresses than this in a subnet is reported (Lambda needs one per network interface it creates).
FEW_FREE_ADDRESSES = 16
# From this many network interfaces in the function's VPC on, their count is reported (near Lambda's quota).
INTERFACES_NEAR_QUOTA = 200


def network_limits(clients: AwsClients, network: NetworkState) -> dict[str, Any]:
    """Where the function's network runs out (get_network_config): its subnets with no route out of the VPC, those
    with few free addresses (subnet -> AvailableIpAddressCount), and its VPC's network interfaces near the quota."""
    routing = read_routing(clients, [s.subnet_id for s in network.subnets])
    interfaces = count_vpc_network_interfaces(clients, network.vpc_id) if network.vpc_id else 0
    return {
        "dns_support": False if network.vpc_id and not vpc_resolves_names(clients, network.vpc_id) else None,
        "no_route_out": [r.subnet_id for r in routing if not r.leads_out],
        "few_free_addresses": {
            r.subnet_id: r.available_ip_address_count
            for r in routing
            if r.available_ip_address_count is not None and r.available_ip_address_count < FEW_FREE_ADDRESSES
        },
        "network_interfaces_in_vpc": interfaces if interfaces >= INTERFACES_NEAR_QUOTA else None,
    }
