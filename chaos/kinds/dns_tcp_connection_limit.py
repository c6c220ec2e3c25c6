"""dns_tcp_connection_limit: host names stop resolving in the function's VPC (catalogue entry
dns-tcp-connection-limit, whose usual cause is a misconfigured DNS): the VPC's DNS resolution is turned off."""

from __future__ import annotations

from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.account.network import read_network
from incident_responder.core.contracts import FaultType


class DnsTcpConnectionLimit(KindParameters):
    """The VPC's enableDnsSupport attribute is turned off: the Amazon-provided DNS server no longer answers."""

    kind: Literal["dns_tcp_connection_limit"]


class DnsTcpConnectionLimitKind(ChaosKind[DnsTcpConnectionLimit]):
    """Turn off DNS resolution in the function's VPC."""

    parameters = DnsTcpConnectionLimit
    fault_type = FaultType.DNS_FAILURE
    workloads = frozenset({DATA_PROCESSOR})
    refusal = "not attached to a VPC"
    slots = ("vpc_dns",)
    help = "turn off DNS resolution (enableDnsSupport) in the function's VPC"

    def inject(self, target: FaultTarget, params: DnsTcpConnectionLimit) -> list[str]:
        network = read_network(target.clients, target.config().get("VpcConfig"))
        if not network.in_vpc or not network.vpc_id:
            raise ChaosError(f"{target.function_name} is not attached to a VPC: it resolves names outside any VPC")
        ec2 = target.clients.get("ec2")
        before = ec2.describe_vpc_attribute(VpcId=network.vpc_id, Attribute="enableDnsSupport")
        target.store.remember("vpc_dns", {"vpc_id": network.vpc_id, "enabled": before["EnableDnsSupport"]["Value"]})
        ec2.modify_vpc_attribute(VpcId=network.vpc_id, EnableDnsSupport={"Value": False})
        target.store.record_fault({"kind": "dns_tcp_connection_limit"})
        return [f"DNS resolution turned off in {network.vpc_id}"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        target.clients.get("ec2").modify_vpc_attribute(
            VpcId=original["vpc_id"], EnableDnsSupport={"Value": bool(original["enabled"])}
        )
        return f"DNS resolution of {original['vpc_id']} restored ({original['enabled']})"
