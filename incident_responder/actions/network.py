"""restore_network_egress: a security group's egress grants put back, network ACL entries added since the baseline removed.

Everything about it: its restore lookup (the remediation MCP tool), its change (capture, apply, undo), its
guardrail, where its difference shows and how verification judges it (:mod:`incident_responder.actions.base`).
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError
from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline
from incident_responder.account.state import FunctionConfiguration
from incident_responder.actions.base import Action, Restoration
from incident_responder.actions.change import _Change, _code
from incident_responder.actions.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _key, _lookup
from incident_responder.actions.targets import _target_reason
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    FaultType,
    NaclEntry,
    ProposedAction,
    RestoreNetworkEgressParams,
    proposed,
)
from incident_responder.core.encoding import canonical

# The fields AuthorizeSecurityGroupEgress takes in an IpPermissions item (EC2 returns more).
SG_RULE_FIELDS = ("IpProtocol", "FromPort", "ToPort", "IpRanges", "Ipv6Ranges", "PrefixListIds", "UserIdGroupPairs")


class GroupEgressRestore(BaseModel):
    security_group_id: str
    missing_egress_rules: list[dict[str, Any]] = Field(description="baseline IpPermissionsEgress absent now")
    extra_egress_rules: list[dict[str, Any]] = Field(default_factory=list)


class AclEntryRestore(BaseModel):
    network_acl_id: str
    added_entries: list[dict[str, Any]] = Field(description="entries absent from the baseline (to remove)")
    missing_entries: list[dict[str, Any]] = Field(default_factory=list)


class NetworkRestoreInfo(BaseModel):
    function_name: str
    security_groups: list[GroupEgressRestore] = Field(default_factory=list)
    network_acls: list[AclEntryRestore] = Field(default_factory=list)
    drifted: bool = False
    baseline_captured_at: str | None = None
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def _rules_by_key(rules: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {_key(r): r for r in rules}


def get_network_restore_info(clients: AwsClients, lambda_name: str) -> NetworkRestoreInfo:
    return _lookup(NetworkRestoreInfo, clients, lambda_name, _network_restore_info, RestoreNetworkEgress.sections)


def _network_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> NetworkRestoreInfo:
    groups = []
    now_groups = {g.group_id: g for g in current.network.security_groups}
    for group in baseline.configuration.network.security_groups:
        before = _rules_by_key(group.egress_rules)
        after = _rules_by_key(now_groups[group.group_id].egress_rules if group.group_id in now_groups else [])
        missing = [r for k, r in before.items() if k not in after]
        extra = [r for k, r in after.items() if k not in before]
        if missing or extra:
            groups.append(
                GroupEgressRestore(
                    security_group_id=group.group_id, missing_egress_rules=missing, extra_egress_rules=extra
                )
            )
    acls = []
    now_acls = {s.network_acl_id: s.entries for s in current.network.subnets if s.network_acl_id}
    seen = set()
    for subnet in baseline.configuration.network.subnets:
        if not subnet.network_acl_id or subnet.network_acl_id in seen:
            continue
        seen.add(subnet.network_acl_id)
        before = _rules_by_key(subnet.entries)
        after = _rules_by_key(now_acls.get(subnet.network_acl_id, []))
        added = [e for k, e in after.items() if k not in before]
        missing = [e for k, e in before.items() if k not in after]
        if added or missing:
            acls.append(
                AclEntryRestore(network_acl_id=subnet.network_acl_id, added_entries=added, missing_entries=missing)
            )
    actions: list[Any] = []
    for egress in groups:
        rules = [
            {k: v for k, v in rule.items() if k in SG_RULE_FIELDS and v not in (None, [])}
            for rule in egress.missing_egress_rules
        ]
        if rules:
            actions.append(
                proposed(
                    fault_type=FaultType.NETWORK_BLOCK,
                    action_type=ActionType.RESTORE_NETWORK_EGRESS,
                    target_resource=egress.security_group_id,
                    parameters=RestoreNetworkEgressParams(
                        security_group_id=egress.security_group_id, ip_permissions=rules
                    ),
                    reasoning=f"{len(rules)} baseline egress rule(s) missing from {egress.security_group_id}",
                )
            )
    for acl in acls:
        entries = [
            NaclEntry(network_acl_id=acl.network_acl_id, rule_number=e["RuleNumber"], egress=bool(e.get("Egress")))
            for e in acl.added_entries
        ]
        if entries:
            actions.append(
                proposed(
                    fault_type=FaultType.NETWORK_BLOCK,
                    action_type=ActionType.RESTORE_NETWORK_EGRESS,
                    target_resource=acl.network_acl_id,
                    parameters=RestoreNetworkEgressParams(remove_nacl_entries=entries),
                    reasoning=f"{len(entries)} NACL entr(y/ies) added to {acl.network_acl_id} since the baseline",
                )
            )
    return NetworkRestoreInfo(
        function_name=name,
        security_groups=groups,
        network_acls=acls,
        drifted=bool(groups or acls),
        baseline_captured_at=baseline.captured_at,
        actions=actions,
    )


# -- the change: capture, apply, undo ----------------------------------------------------------------


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


# -- the guardrail ----------------------------------------------------------------------------------


def _rule_key(rule: dict[str, Any]) -> str:
    """An egress rule compared by content: empty lists and nulls, as EC2 pads them, do not count."""
    return _key({k: v for k, v in rule.items() if v not in (None, [], {})})


def _check_network(
    p: RestoreNetworkEgressParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    reasons = []
    groups = {g.group_id for g in current.network.security_groups}
    if p.security_group_id is not None and p.security_group_id not in groups:
        reasons.append(
            f"security group {p.security_group_id} is not the function's ({', '.join(sorted(groups)) or 'none'})"
        )
    base_rules = {
        _rule_key(rule)
        for g in baseline.network.security_groups
        if g.group_id == p.security_group_id
        for rule in g.egress_rules
    }
    for rule in p.ip_permissions:
        if _rule_key(rule) not in base_rules:
            reasons.append(f"egress rule {json.dumps(rule, sort_keys=True)[:200]} is not in the baseline")
    acls = {s.network_acl_id: s.entries for s in current.network.subnets if s.network_acl_id}
    base_acls = {s.network_acl_id: s.entries for s in baseline.network.subnets if s.network_acl_id}
    for entry in p.remove_nacl_entries:
        if entry.network_acl_id not in acls:
            reasons.append(f"NACL {entry.network_acl_id} is not on the function's subnets")
            continue
        if any(
            e["RuleNumber"] == entry.rule_number and bool(e.get("Egress")) == entry.egress
            for e in base_acls.get(entry.network_acl_id, [])
        ):
            reasons.append(
                f"NACL {entry.network_acl_id} rule {entry.rule_number} is in the baseline: removing it is not a restore"
            )
    return reasons


# -- the action ------------------------------------------------------------------------------------


class RestoreNetworkEgress(Action):
    """A security group's egress grants put back, network ACL entries added since the baseline removed. High risk:
    a wrong one opens or closes what the function can reach; a person approves unless the deployment opts in."""

    action_type = ActionType.RESTORE_NETWORK_EGRESS
    risk = "high"
    approval = "access"
    iam_writes = frozenset(
        {
            "ec2:AuthorizeSecurityGroupEgress",
            "ec2:RevokeSecurityGroupEgress",
            "ec2:CreateNetworkAclEntry",
            "ec2:ReplaceNetworkAclEntry",
            "ec2:DeleteNetworkAclEntry",
        }
    )
    # The lookup's field that shows a fault already at the baseline (the offline critic's no-op check).
    no_drift = {
        FaultType.NETWORK_BLOCK: ("drifted", "the egress rules and NACL entries already match the baseline"),
    }
    lookup_tool = "get_network_restore_info"
    sections = ("network",)
    lookup_model = NetworkRestoreInfo
    lookup_description = (
        "Security-group egress rules missing since the baseline and NACL entries added since (to remove)."
    )
    change = _NetworkEgress()

    def lookup(self, clients, lambda_name):
        return get_network_restore_info(clients, lambda_name)

    def guardrail(self, action, p, current, baseline, clients):
        changed = [p.security_group_id or ""] + [e.network_acl_id for e in p.remove_nacl_entries]
        return _target_reason(action, "a security group or NACL", "ec2", changed) + _check_network(p, current, baseline)

    def drift_paths(self, p, current):
        acls = {e.network_acl_id for e in p.remove_nacl_entries}
        subnets = [f"network.subnets.{s.subnet_id}" for s in current.network.subnets if s.network_acl_id in acls]
        return ([f"network.security_groups.{p.security_group_id}"] if p.ip_permissions else []) + subnets

    def verify(self, p, current, baseline):
        found = Restoration()
        if p.ip_permissions and p.security_group_id:  # the contract refuses ip_permissions without the group
            found.targets.append(f"the egress of {p.security_group_id}")
            # Grant by grant: EC2 groups egress rules as it likes, so whole rules do not compare.
            rules = {g.group_id: g.egress_rules for g in current.network.security_groups}
            base = {g.group_id: g.egress_rules for g in baseline.network.security_groups}
            grants_now = set(egress_grants(rules.get(p.security_group_id, [])))
            grants_before = set(egress_grants(base.get(p.security_group_id, [])))
            if grants_now != grants_before:
                found.problems.append(
                    f"egress of {p.security_group_id}: {len(grants_before - grants_now)} baseline grant(s) missing, "
                    f"{len(grants_now - grants_before)} not in the baseline"
                )
        acls = {e.network_acl_id for e in p.remove_nacl_entries}
        found.prefixes = [
            f"network.subnets.{s.subnet_id}.entries" for s in current.network.subnets if s.network_acl_id in acls
        ]
        return found
