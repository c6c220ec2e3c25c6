"""REMEDIATING and ROLLING_BACK: a security group's egress grants authorized, network ACL entries removed."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import RestoreNetworkEgressParams
from incident_responder.core.encoding import canonical
from incident_responder.remediation.changes.base import _Change, _code

# Security-group rules compared one grant at a time (protocol, ports, one range or group): EC2 merges
# and splits IpPermissions as it likes, so whole rules do not compare.
_GRANTS = (("IpRanges", "CidrIp"), ("Ipv6Ranges", "CidrIpv6"), ("PrefixListIds", "PrefixListId"))


def egress_grants(permissions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One IpPermission per grant, keyed by what it allows (descriptions do not count)."""
    out = {}
    for rule in permissions:
        protocol = str(rule.get("IpProtocol", "-1")).lower()
        base: dict[str, Any] = {"IpProtocol": protocol}
        if protocol != "-1":
            base |= {k: rule[k] for k in ("FromPort", "ToPort") if rule.get(k) is not None}
        items = [(field, key, item) for field, key in _GRANTS for item in rule.get(field) or []]
        items += [("UserIdGroupPairs", "GroupId", pair) for pair in rule.get("UserIdGroupPairs") or []]
        for field, key, item in items:
            kept = {k: v for k, v in item.items() if k in (key, "Description", "UserId")}
            identity = canonical({**base, field: item.get(key)})
            out[identity] = {**base, field: [kept]}
    return out


class _NetworkEgress(_Change):
    def resources(self, p: RestoreNetworkEgressParams) -> list[str]:
        groups = [f"security-group:{p.security_group_id}"] if p.ip_permissions else []
        return groups + sorted({f"network-acl:{e.network_acl_id}" for e in p.remove_nacl_entries})

    def satisfied(self, p: RestoreNetworkEgressParams, state: dict[str, Any]) -> bool:
        # Every grant present already and none of the entries to remove there any more.
        return len(state["already_present"]) == len(egress_grants(p.ip_permissions)) and not state["nacl_entries"]

    def capture(self, clients: AwsClients, p: RestoreNetworkEgressParams) -> dict[str, Any]:
        ec2 = clients.get("ec2")
        prior: dict[str, Any] = {"security_group_id": p.security_group_id, "already_present": [], "nacl_entries": []}
        if p.ip_permissions:
            present = self._current_grants(clients, p.security_group_id)
            wanted = egress_grants(p.ip_permissions)
            prior["already_present"] = [wanted[k] for k in sorted(wanted) if k in present]
        entries = []
        for acl_id in sorted({e.network_acl_id for e in p.remove_nacl_entries}):
            acl = ec2.describe_network_acls(NetworkAclIds=[acl_id])["NetworkAcls"][0]
            for entry in p.remove_nacl_entries:
                found = self._entry(acl, entry.rule_number, entry.egress) if entry.network_acl_id == acl_id else None
                if found is not None:  # an entry already gone is nothing to recreate
                    entries.append({"NetworkAclId": acl_id, **found})
        prior["nacl_entries"] = sorted(entries, key=lambda e: (e["NetworkAclId"], e["Egress"], e["RuleNumber"]))
        return prior

    def apply(self, clients: AwsClients, p: RestoreNetworkEgressParams) -> str:
        ec2 = clients.get("ec2")
        done = []
        if p.ip_permissions:
            present = self._current_grants(clients, p.security_group_id)
            missing = [g for k, g in egress_grants(p.ip_permissions).items() if k not in present]
            if missing:
                try:
                    ec2.authorize_security_group_egress(GroupId=p.security_group_id, IpPermissions=missing)
                except ClientError as exc:
                    if _code(exc) != "InvalidPermission.Duplicate":
                        raise
            done.append(f"authorized {len(missing)} egress grant(s) on {p.security_group_id}")
        for entry in p.remove_nacl_entries:
            acl = ec2.describe_network_acls(NetworkAclIds=[entry.network_acl_id])["NetworkAcls"][0]
            if self._entry(acl, entry.rule_number, entry.egress) is not None:
                ec2.delete_network_acl_entry(
                    NetworkAclId=entry.network_acl_id, RuleNumber=entry.rule_number, Egress=entry.egress
                )
            done.append(
                f"removed NACL {entry.network_acl_id} {'egress' if entry.egress else 'ingress'} rule {entry.rule_number}"
            )
        return "; ".join(done)

    def restore(self, clients: AwsClients, p: RestoreNetworkEgressParams, prior: dict[str, Any]) -> None:
        ec2 = clients.get("ec2")
        if p.ip_permissions:
            present = self._current_grants(clients, p.security_group_id)
            keep = set(egress_grants(prior["already_present"]))
            added = [g for k, g in egress_grants(p.ip_permissions).items() if k in present and k not in keep]
            if added:
                try:
                    ec2.revoke_security_group_egress(GroupId=p.security_group_id, IpPermissions=added)
                except ClientError as exc:
                    if _code(exc) != "InvalidPermission.NotFound":
                        raise
        for entry in prior["nacl_entries"]:
            acl = ec2.describe_network_acls(NetworkAclIds=[entry["NetworkAclId"]])["NetworkAcls"][0]
            now = self._entry(acl, entry["RuleNumber"], entry["Egress"])
            if now is not None and canonical({"NetworkAclId": entry["NetworkAclId"], **now}) == canonical(entry):
                continue
            fields = {
                k: entry[k]
                for k in ("Protocol", "RuleAction", "CidrBlock", "Ipv6CidrBlock", "PortRange", "IcmpTypeCode")
                if entry.get(k) is not None
            }
            call = ec2.create_network_acl_entry if now is None else ec2.replace_network_acl_entry
            call(NetworkAclId=entry["NetworkAclId"], RuleNumber=entry["RuleNumber"], Egress=entry["Egress"], **fields)

    @staticmethod
    def _current_grants(clients: AwsClients, group_id: str | None) -> dict[str, dict[str, Any]]:
        group = clients.get("ec2").describe_security_groups(GroupIds=[group_id])["SecurityGroups"][0]
        return egress_grants(group.get("IpPermissionsEgress", []))

    @staticmethod
    def _entry(acl: dict[str, Any], rule_number: int, egress: bool) -> dict[str, Any] | None:
        return next(
            (e for e in acl.get("Entries", []) if e["RuleNumber"] == rule_number and bool(e.get("Egress")) == egress),
            None,
        )
