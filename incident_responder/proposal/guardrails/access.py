"""PROPOSING and REMEDIATING: restores of what the function may reach: its role's policies, egress, key and secrets.

Each restores exactly the baseline: statements only from the baseline document (never from the current policy,
which is what an attacker could have changed), managed policies the baseline attached, egress rules from the
baseline, NACL removals only of entries the baseline lacks, the key the baseline recorded Enabled, a secret the
baseline recorded available.
"""

from __future__ import annotations

import json
from typing import Any

from incident_responder.account.iam_policy import statements
from incident_responder.account.state import FunctionConfiguration
from incident_responder.core.contracts import (
    EnableKmsKeyParams,
    RestoreIamPolicyParams,
    RestoreNetworkEgressParams,
    RestoreSecretParams,
)


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _rule_key(rule: dict[str, Any]) -> str:
    """An egress rule compared by content: empty lists and nulls, as EC2 pads them, do not count."""
    return _key({k: v for k, v in rule.items() if v not in (None, [], {})})


def _has_wildcard(statement: dict[str, Any]) -> bool:
    for field in ("Action", "Resource", "NotAction", "NotResource"):
        values = statement.get(field, [])
        values = [values] if isinstance(values, str) else values
        if any(v == "*" or v.endswith(":*") and field in ("Action", "NotAction") for v in values):
            return True
    return "NotAction" in statement or "NotResource" in statement


def _check_iam(p: RestoreIamPolicyParams, current: FunctionConfiguration, baseline: FunctionConfiguration) -> list[str]:
    reasons = []
    if p.role_name != current.role.role_name:
        reasons.append(f"targets role {p.role_name}, not the function's role {current.role.role_name}")
    if p.attach_policy_arn is not None:
        if p.attach_policy_arn not in baseline.role.attached_policy_arns:
            reasons.append(f"managed policy {p.attach_policy_arn} was not attached in the baseline")
        return reasons
    name = p.policy_name or ""
    if name not in baseline.role.inline_policies:
        reasons.append(f"inline policy {name} is not in the baseline")
        return reasons
    # Only the baseline is trusted: a statement present in the current policy may be the attacker's.
    allowed = {_key(s) for s in statements(baseline.role.inline_policies[name])}
    for statement in statements(p.policy_document or {}):
        if _key(statement) in allowed:
            continue
        kind = "is not in the baseline" + (" and widens access with a wildcard" if _has_wildcard(statement) else "")
        reasons.append(f"statement {json.dumps(statement, sort_keys=True)[:200]} {kind}")
    return reasons


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


def _check_kms(p: EnableKmsKeyParams, current: FunctionConfiguration, baseline: FunctionConfiguration) -> list[str]:
    now = {k.key_arn: k for k in current.kms_keys}
    recorded = {k.key_arn: k for k in baseline.kms_keys}
    if p.key_arn not in now:
        names = ", ".join(sorted(now)) or "none: it uses an AWS-managed key"
        return [f"key {p.key_arn} is not the key the function's configuration names ({names})"]
    if p.key_arn not in recorded:
        return [f"key {p.key_arn} was not recorded in the baseline: only a key recorded Enabled there is enabled"]
    if recorded[p.key_arn].key_state != "Enabled":
        return [f"key {p.key_arn} was {recorded[p.key_arn].key_state} in the baseline, not Enabled"]
    state = now[p.key_arn].key_state
    if state == "Enabled":
        return [f"key {p.key_arn} is already Enabled: nothing to restore"]
    if state != "Disabled":
        return [f"key {p.key_arn} is {state}: EnableKey restores only a Disabled key"]
    return []


def _check_secret(p: RestoreSecretParams, current: FunctionConfiguration, baseline: FunctionConfiguration) -> list[str]:
    recorded = {s.secret_arn: s for s in baseline.secrets}
    base = recorded.get(p.secret_arn)
    if base is None:
        known = ", ".join(sorted(recorded)) or "none"
        return [f"secret {p.secret_arn} is not one the function's environment named in the baseline ({known})"]
    if not base.exists or base.deleted_date is not None:
        return [f"secret {p.secret_arn} was not available in the baseline: only a secret available then is restored"]
    now = next((s for s in current.secrets if s.secret_arn == p.secret_arn), None)
    if now is None:
        return [f"the function's environment no longer names secret {p.secret_arn}"]
    if not now.exists:
        return [f"secret {p.secret_arn} no longer exists: RestoreSecret cannot bring back a deleted secret"]
    if now.deleted_date is None:
        return [f"secret {p.secret_arn} is not scheduled for deletion: nothing to restore"]
    return []
