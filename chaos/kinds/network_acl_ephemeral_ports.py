"""network_acl_ephemeral_ports: the network ACLs of the function's subnets deny inbound TCP on the ephemeral ports
1024 to 65535, where the replies to its connections come back (catalogue entry network-acl-ephemeral-ports)."""

from __future__ import annotations

from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.account.network import read_network
from incident_responder.core.contracts import FaultType

# Lower than any rule a person would write, so the deny is evaluated first (NACLs are ordered and stateless).
NACL_INGRESS_DENY_RULE = 1
# The range Lambda's Hyperplane network interfaces use (the troubleshooting page's words).
EPHEMERAL_PORTS = {"From": 1024, "To": 65535}


class NetworkAclEphemeralPorts(KindParameters):
    """An inbound deny of TCP 1024-65535 in each subnet's network ACL: the function's connections get no reply."""

    kind: Literal["network_acl_ephemeral_ports"]


class NetworkAclEphemeralPortsKind(ChaosKind[NetworkAclEphemeralPorts]):
    """Deny inbound TCP on the ephemeral ports in the network ACLs of the function's subnets."""

    parameters = NetworkAclEphemeralPorts
    fault_type = FaultType.NETWORK_BLOCK
    workloads = frozenset({DATA_PROCESSOR})
    refusal = "not attached to a VPC"
    slots = ("nacl_ingress",)  # nacl_ingress.<acl>.<rule>: the inbound entry the rule number held (None: none)
    help = "deny inbound TCP 1024-65535 (the ephemeral ports) in the network ACLs of the function's subnets"

    def inject(self, target: FaultTarget, params: NetworkAclEphemeralPorts) -> list[str]:
        network = read_network(target.clients, target.config().get("VpcConfig"))
        if not network.in_vpc:
            raise ChaosError(f"{target.function_name} is not attached to a VPC: no network ACL filters its traffic")
        ec2 = target.clients.get("ec2")
        changes = []
        for acl_id, entries in {s.network_acl_id: s.entries for s in network.subnets if s.network_acl_id}.items():
            rule = NACL_INGRESS_DENY_RULE
            existing = next((e for e in entries if not e.get("Egress") and e["RuleNumber"] == rule), None)
            target.store.remember(f"nacl_ingress.{acl_id}.{rule}", existing)
            entry = dict(
                NetworkAclId=acl_id,
                RuleNumber=rule,
                Protocol="6",
                RuleAction="deny",
                Egress=False,
                CidrBlock="0.0.0.0/0",
                PortRange=EPHEMERAL_PORTS,
            )
            if existing is None:
                ec2.create_network_acl_entry(**entry)
            else:
                ec2.replace_network_acl_entry(**entry)
            changes.append(f"NACL {acl_id}: inbound rule {rule} denies TCP 1024-65535")
        target.store.record_fault({"kind": "network_acl_ephemeral_ports"})
        return changes

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        acl_id, _, rule = slot.removeprefix("nacl_ingress.").rpartition(".")
        ec2 = target.clients.get("ec2")
        acl = ec2.describe_network_acls(NetworkAclIds=[acl_id])["NetworkAcls"][0]
        present = any(not e["Egress"] and e["RuleNumber"] == int(rule) for e in acl.get("Entries", []))
        if original is None:
            if not present:
                return f"NACL {acl_id}: inbound rule {rule} already removed"
            ec2.delete_network_acl_entry(NetworkAclId=acl_id, RuleNumber=int(rule), Egress=False)
            return f"NACL {acl_id}: inbound rule {rule} removed"
        fields = {
            k: original[k]
            for k in ("Protocol", "RuleAction", "CidrBlock", "Ipv6CidrBlock", "PortRange", "IcmpTypeCode")
            if original.get(k)
        }
        call = ec2.replace_network_acl_entry if present else ec2.create_network_acl_entry
        call(NetworkAclId=acl_id, RuleNumber=int(rule), Egress=False, **fields)
        return f"NACL {acl_id}: inbound rule {rule} restored"
