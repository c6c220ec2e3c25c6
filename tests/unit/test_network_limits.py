"""Where a VPC-connected function's network runs out, as the network reader sees it: routes out of its subnets,
free addresses, the VPC's network interfaces and DNS resolution, and VpcConfig ids that no longer exist."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from incident_responder.account.network import network_limits, read_network, read_routing
from incident_responder.core.aws import AwsClients

REGION = "us-east-1"


@pytest.fixture
def vpc():
    with mock_aws():
        clients = AwsClients(boto3.Session(region_name=REGION))
        ec2 = clients.get("ec2")
        vpc_id = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
        private = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.9.1.0/24")["Subnet"]["SubnetId"]
        public = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.9.0.0/24")["Subnet"]["SubnetId"]
        group = ec2.create_security_group(GroupName="g", Description="g", VpcId=vpc_id)["GroupId"]
        yield clients, ec2, vpc_id, private, public, group


def test_a_subnet_on_the_main_route_table_has_no_route_out_until_a_nat_gateway_or_an_endpoint(vpc):
    clients, ec2, vpc_id, private, public, _ = vpc
    assert [r.leads_out for r in read_routing(clients, [private])] == [False]
    allocation = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=public, AllocationId=allocation)["NatGateway"]["NatGatewayId"]
    table = ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"]
    ec2.associate_route_table(RouteTableId=table, SubnetId=private)
    assert read_routing(clients, [private])[0].route_table_id == table
    assert not read_routing(clients, [private])[0].leads_out
    ec2.create_vpc_endpoint(VpcId=vpc_id, ServiceName=f"com.amazonaws.{REGION}.s3", RouteTableIds=[table])
    assert read_routing(clients, [private])[0].endpoints and read_routing(clients, [private])[0].leads_out
    ec2.create_route(RouteTableId=table, DestinationCidrBlock="0.0.0.0/0", NatGatewayId=nat)
    assert read_routing(clients, [private])[0].route_out == nat


def test_the_limits_name_only_what_runs_out(vpc):
    clients, ec2, vpc_id, private, _, group = vpc
    network = read_network(clients, {"SubnetIds": [private], "SecurityGroupIds": [group]})
    limits = network_limits(clients, network)
    assert limits == {
        "dns_support": None,
        "no_route_out": [private],
        "few_free_addresses": {},
        "network_interfaces_in_vpc": None,
    }
    for _ in range(5):  # 5 x 50 addresses, then the last one: the /24 has 251
        ec2.create_network_interface(SubnetId=private, SecondaryPrivateIpAddressCount=49)
    ec2.create_network_interface(SubnetId=private)
    ec2.modify_vpc_attribute(VpcId=vpc_id, EnableDnsSupport={"Value": False})
    limits = network_limits(clients, network)
    assert limits["few_free_addresses"] == {private: 0} and limits["dns_support"] is False


def test_ids_ec2_no_longer_knows_are_named_missing_not_an_error(vpc):
    clients, ec2, vpc_id, private, _, group = vpc
    gone = ec2.create_security_group(GroupName="gone", Description="g", VpcId=vpc_id)["GroupId"]
    ec2.delete_security_group(GroupId=gone)
    network = read_network(
        clients, {"SubnetIds": [private, "subnet-0123456789abcdef0"], "SecurityGroupIds": [gone, group]}
    )
    assert network.missing == [gone, "subnet-0123456789abcdef0"]
    assert [g.group_id for g in network.security_groups] == [group]
    assert [s.subnet_id for s in network.subnets] == [private]
