"""network_block: no egress from the function's security groups, and the subnets' network ACLs deny it."""

from __future__ import annotations

from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.account.network import read_network
from incident_responder.core.contracts import FaultType

# Lower than any rule a person would write, so the deny is evaluated first.
NACL_DENY_RULE = 1


class NetworkBlock(KindParameters):
    kind: Literal["network_block"]


def _clean_permission(rule: dict[str, Any]) -> dict[str, Any]:
    """An IpPermission as EC2 returns it, reduced to what AuthorizeSecurityGroupEgress accepts."""
    keep = {"IpProtocol", "FromPort", "ToPort", "IpRanges", "Ipv6Ranges", "PrefixListIds", "UserIdGroupPairs"}
    out = {k: v for k, v in rule.items() if k in keep and v not in (None, [])}
    if "UserIdGroupPairs" in out:
        out["UserIdGroupPairs"] = [
            {k: v for k, v in pair.items() if k in ("GroupId", "UserId", "Description")}
            for pair in out["UserIdGroupPairs"]
        ]
    return out


class NetworkBlockKind(ChaosKind[NetworkBlock]):
    """No egress: remove the security groups' egress rules and deny egress in the subnets' NACLs."""

    parameters = NetworkBlock
    fault_type = FaultType.NETWORK_BLOCK
    workloads = frozenset({DATA_PROCESSOR})
    refusal = "not attached to a VPC"
    slots = ("sg", "nacl")  # sg.<group>.egress, nacl.<acl>.egress.<rule>
    help = "remove egress from the function's security groups and subnet NACLs"

    def inject(self, target: FaultTarget, params: NetworkBlock) -> list[str]:
        network = read_network(target.clients, target.config().get("VpcConfig"))
        if not network.in_vpc:
            raise ChaosError(f"{target.function_name} is not attached to a VPC: there is no egress path to block")
        ec2 = target.clients.get("ec2")
        changes = []
        for group in network.security_groups:
            target.store.remember(f"sg.{group.group_id}.egress", group.egress_rules)
            if group.egress_rules:
                ec2.revoke_security_group_egress(
                    GroupId=group.group_id, IpPermissions=[_clean_permission(r) for r in group.egress_rules]
                )
                changes.append(f"revoked {len(group.egress_rules)} egress rule(s) of {group.group_id}")
        for acl_id, entries in {s.network_acl_id: s.entries for s in network.subnets if s.network_acl_id}.items():
            existing = next((e for e in entries if e.get("Egress") and e["RuleNumber"] == NACL_DENY_RULE), None)
            target.store.remember(f"nacl.{acl_id}.egress.{NACL_DENY_RULE}", existing)
            entry = dict(
                NetworkAclId=acl_id,
                RuleNumber=NACL_DENY_RULE,
                Protocol="-1",
                RuleAction="deny",
                Egress=True,
                CidrBlock="0.0.0.0/0",
            )
            if existing is None:
                ec2.create_network_acl_entry(**entry)
            else:
                ec2.replace_network_acl_entry(**entry)
            changes.append(f"NACL {acl_id}: egress rule {NACL_DENY_RULE} denies all")
        target.store.record_fault({"kind": "network_block"})
        return changes

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        prefix, _, rest = slot.partition(".")
        if prefix == "sg":
            return _restore_group(target, rest.removesuffix(".egress"), original or [])
        return _restore_nacl(target, rest, original)


def _restore_group(target: FaultTarget, group_id: str, original: list[dict[str, Any]]) -> str:
    ec2 = target.clients.get("ec2")
    current = ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"][0].get("IpPermissionsEgress", [])
    if current:
        ec2.revoke_security_group_egress(GroupId=group_id, IpPermissions=[_clean_permission(r) for r in current])
    if original:
        ec2.authorize_security_group_egress(GroupId=group_id, IpPermissions=[_clean_permission(r) for r in original])
    return f"egress rules of {group_id} restored ({len(original)})"


def _restore_nacl(target: FaultTarget, rest: str, original: dict[str, Any] | None) -> str:
    acl_id, _, rule = rest.partition(".egress.")
    ec2 = target.clients.get("ec2")
    if original is None:
        acl = ec2.describe_network_acls(NetworkAclIds=[acl_id])["NetworkAcls"][0]
        if not any(e["Egress"] and e["RuleNumber"] == int(rule) for e in acl.get("Entries", [])):
            # Already gone (the responder's remediation removed it): nothing to put back.
            return f"NACL {acl_id}: egress rule {rule} already removed"
        ec2.delete_network_acl_entry(NetworkAclId=acl_id, RuleNumber=int(rule), Egress=True)
        return f"NACL {acl_id}: egress rule {rule} removed"
    fields = {
        k: original[k]
        for k in ("Protocol", "RuleAction", "CidrBlock", "Ipv6CidrBlock", "PortRange", "IcmpTypeCode")
        if original.get(k)
    }
    ec2.replace_network_acl_entry(NetworkAclId=acl_id, RuleNumber=int(rule), Egress=True, **fields)
    return f"NACL {acl_id}: egress rule {rule} restored"
