"""PROPOSING and REVIEWING: security-group egress rules lost and NACL entries added since the baseline."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline
from incident_responder.account.state import FunctionConfiguration
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    FaultType,
    NaclEntry,
    ProposedAction,
    ProposedRestoreNetworkEgress,
    RestoreNetworkEgressParams,
)
from incident_responder.proposal.lookups.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _key, _lookup

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
    return _lookup(NetworkRestoreInfo, clients, lambda_name, _network_restore_info)


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
                ProposedRestoreNetworkEgress(
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
                ProposedRestoreNetworkEgress(
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
