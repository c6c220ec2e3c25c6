"""Deterministic guardrails on a remediation proposal, applied after the model, whatever it said.

An action survives only if its type is allowed, its target is the incident's own function, role,
security group or NACL, and it restores no more than the recorded baseline: no statement the
baseline (or the current policy) does not already hold, no wildcard widening, no managed policy the
baseline did not attach, concurrency / timeout / memory within the baseline, egress rules only from
the baseline, NACL removals only of entries the baseline lacks. Ground truth is read here from the
account and the baseline table, never taken from the model or the tool results it saw.
"""

from __future__ import annotations

import json
from typing import Any

from incident_responder.account_state import FunctionConfiguration
from incident_responder.contracts import (
    ActionType,
    RejectedAction,
    RemediationAction,
    RemediationProposal,
    RestoreIamPolicyParams,
    RestoreNetworkEgressParams,
    UpdateConcurrencyParams,
    UpdateFunctionConfigurationParams,
)
from incident_responder.iam_policy import statements

ALLOWED_ACTIONS = set(ActionType)
# Set by policy, never by the model: what an action could break if it were wrong. Every action needs a
# person's approval until the approval policy of the closed loop decides otherwise.
RISK_FOR_ACTION = {
    ActionType.RESTORE_IAM_POLICY: "high",
    ActionType.RESTORE_NETWORK_EGRESS: "high",
    ActionType.UPDATE_CONCURRENCY: "medium",
    ActionType.UPDATE_FUNCTION_CONFIGURATION: "medium",
}


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


def check_action(
    action: RemediationAction, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    """Reasons to reject the action; empty when it may be proposed."""
    if action.action_type not in ALLOWED_ACTIONS:
        return [f"action type {action.action_type.value} is not allowed"]
    params = action.typed_parameters()
    if isinstance(params, UpdateConcurrencyParams):
        return _check_concurrency(params, current, baseline)
    if isinstance(params, UpdateFunctionConfigurationParams):
        return _check_configuration(params, current, baseline)
    if isinstance(params, RestoreIamPolicyParams):
        return _check_iam(params, current, baseline)
    if isinstance(params, RestoreNetworkEgressParams):
        return _check_network(params, current, baseline)
    return [f"no guardrail knows {action.action_type.value}"]


def _check_concurrency(
    p: UpdateConcurrencyParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    reasons = []
    if p.function_name != current.function_name:
        reasons.append(f"targets function {p.function_name}, not the incident's function {current.function_name}")
    before = baseline.reserved_concurrency
    if before is None and p.reserved_concurrent_executions is not None:
        reasons.append("the baseline has no reservation: only removing the reservation restores it")
    if before is not None and (p.reserved_concurrent_executions is None or p.reserved_concurrent_executions > before):
        reasons.append(f"reserved concurrency must stay within the baseline ({before})")
    return reasons


def _check_configuration(
    p: UpdateFunctionConfigurationParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    reasons = []
    if p.function_name != current.function_name:
        reasons.append(f"targets function {p.function_name}, not the incident's function {current.function_name}")
    if p.timeout is not None and p.timeout > baseline.timeout:
        reasons.append(f"timeout {p.timeout} s exceeds the baseline {baseline.timeout} s")
    if p.memory_size is not None and p.memory_size > baseline.memory_size:
        reasons.append(f"memory {p.memory_size} MB exceeds the baseline {baseline.memory_size} MB")
    return reasons


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
    allowed = {_key(s) for s in statements(baseline.role.inline_policies[name])}
    allowed |= {_key(s) for s in statements(current.role.inline_policies.get(name) or {})}
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


def apply_guardrails(
    proposal: RemediationProposal, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> RemediationProposal:
    """The proposal with only surviving actions; rejected ones kept in ``rejected_actions`` with reasons."""
    kept, rejected = [], list(proposal.rejected_actions)
    for action in proposal.actions:
        action = action.model_copy(
            update={"risk_level": RISK_FOR_ACTION[action.action_type], "requires_approval": True}
        )
        reasons = check_action(action, current, baseline)
        if reasons:
            rejected.append(RejectedAction(action=action, reasons=reasons))
        else:
            kept.append(action)
    return RemediationProposal.model_validate(
        {
            **proposal.model_dump(mode="json", exclude={"actions", "rejected_actions"}),
            "actions": [a.model_dump(mode="json") for a in kept],
            "rejected_actions": [r.model_dump(mode="json") for r in rejected],
        }
    )
