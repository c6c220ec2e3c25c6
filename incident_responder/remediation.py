"""Read-only lookups that compute restore parameters from a function's recorded baseline.

Behind the remediation MCP server (``mcp/remediation/server.py``). Nothing here changes the account:
each lookup compares the current configuration with the baseline and says exactly what would put
it back, and returns it as ``actions``: validated actions in the shape ``submit_proposal`` takes, so
a model copies them instead of rebuilding parameters. Errors come back in an ``error`` field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from incident_responder.account_state import FunctionConfiguration, function_name_of, read_function_configuration
from incident_responder.aws import AwsClients
from incident_responder.baseline import Baseline, BaselineNotFoundError, load_baseline
from incident_responder.contracts import (
    ActionType,
    FaultType,
    NaclEntry,
    ProposedAction,
    ProposedRestoreIamPolicy,
    ProposedRestoreNetworkEgress,
    ProposedUpdateConcurrency,
    ProposedUpdateFunctionConfiguration,
    RestoreIamPolicyParams,
    RestoreNetworkEgressParams,
    UpdateConcurrencyParams,
    UpdateFunctionConfigurationParams,
)
from incident_responder.diagnostics import AWS_ERRORS, describe_error
from incident_responder.iam_policy import statements

ACTIONS_DESCRIPTION = "ready-made actions for submit_proposal: copy them, adding your own reasoning"
# The fields AuthorizeSecurityGroupEgress takes in an IpPermissions item (EC2 returns more).
SG_RULE_FIELDS = ("IpProtocol", "FromPort", "ToPort", "IpRanges", "Ipv6Ranges", "PrefixListIds", "UserIdGroupPairs")


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _lookup(model: type[BaseModel], clients: AwsClients, lambda_name: str, compute: Callable[..., Any]) -> Any:
    """Read the current configuration and the baseline, then ``compute``; failures become ``error``."""
    name = function_name_of(lambda_name)
    try:
        current = read_function_configuration(clients, name)
        baseline = load_baseline(clients, name)
    except BaselineNotFoundError as exc:
        return model(function_name=name, error=str(exc))
    except AWS_ERRORS as exc:
        return model(function_name=name, error=describe_error(exc))
    return compute(name, current, baseline)


# -- IAM ------------------------------------------------------------------------------------------
class PolicyRestore(BaseModel):
    policy_name: str
    status: str = Field(description="missing (deleted since the baseline) or modified")
    restore_document: dict[str, Any] = Field(
        description="PutRolePolicy document: the baseline document, exactly (only the baseline is trusted)"
    )
    current_document: dict[str, Any] | None = None
    missing_statements: list[dict[str, Any]] = Field(default_factory=list)
    statements_not_in_baseline: list[dict[str, Any]] = Field(
        default_factory=list, description="current statements the restore drops: a person should review them"
    )


class IamRestoreInfo(BaseModel):
    function_name: str
    role_name: str | None = None
    role_arn: str | None = None
    baseline_captured_at: str | None = None
    drifted: bool = False
    policies: list[PolicyRestore] = Field(default_factory=list)
    attach_policy_arns: list[str] = Field(default_factory=list, description="baseline managed policies now detached")
    not_in_baseline: list[str] = Field(
        default_factory=list, description="inline policies or ARNs the baseline lacks (left alone)"
    )
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    error: str | None = None


def get_iam_restore_info(clients: AwsClients, lambda_name: str) -> IamRestoreInfo:
    return _lookup(IamRestoreInfo, clients, lambda_name, _iam_restore_info)


def _iam_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> IamRestoreInfo:
    base_role, role = baseline.configuration.role, current.role
    restores = []
    for policy, document in base_role.inline_policies.items():
        now = role.inline_policies.get(policy)
        base_statements = statements(document)
        now_statements = statements(now) if now else []
        missing = [s for s in base_statements if _key(s) not in {_key(n) for n in now_statements}]
        if not missing:
            continue
        # The baseline document as recorded: a statement only the current policy has may be an attacker's,
        # so it is dropped and listed for a person to review, never carried into the restore.
        base_keys = {_key(b) for b in base_statements}
        restores.append(
            PolicyRestore(
                policy_name=policy,
                status="missing" if now is None else "modified",
                restore_document=document,
                current_document=now,
                missing_statements=missing,
                statements_not_in_baseline=[n for n in now_statements if _key(n) not in base_keys],
            )
        )
    detached = sorted(set(base_role.attached_policy_arns) - set(role.attached_policy_arns))
    extra = sorted(set(role.inline_policies) - set(base_role.inline_policies)) + sorted(
        set(role.attached_policy_arns) - set(base_role.attached_policy_arns)
    )
    actions = [
        ProposedRestoreIamPolicy(
            fault_type=FaultType.PERMISSION_LOSS,
            action_type=ActionType.RESTORE_IAM_POLICY,
            target_resource=role.role_arn,
            parameters=RestoreIamPolicyParams(
                role_name=role.role_name, policy_name=r.policy_name, policy_document=r.restore_document
            ),
            reasoning=f"inline policy {r.policy_name} is {r.status} compared with the baseline",
        )
        for r in restores
    ] + [
        ProposedRestoreIamPolicy(
            fault_type=FaultType.PERMISSION_LOSS,
            action_type=ActionType.RESTORE_IAM_POLICY,
            target_resource=role.role_arn,
            parameters=RestoreIamPolicyParams(role_name=role.role_name, attach_policy_arn=arn),
            reasoning=f"managed policy {arn} was attached in the baseline",
        )
        for arn in detached
    ]
    return IamRestoreInfo(
        function_name=name,
        role_name=role.role_name,
        role_arn=role.role_arn,
        baseline_captured_at=baseline.captured_at,
        drifted=bool(restores or detached),
        policies=restores,
        attach_policy_arns=detached,
        not_in_baseline=extra,
        actions=actions,
    )


# -- concurrency ----------------------------------------------------------------------------------
class ConcurrencyRestoreInfo(BaseModel):
    function_name: str
    current_reserved: int | None = None
    baseline_reserved: int | None = None
    action: str = Field(
        default="none", description="put (set the baseline value), delete (baseline had no reservation) or none"
    )
    baseline_captured_at: str | None = None
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    error: str | None = None


def get_concurrency_restore_info(clients: AwsClients, lambda_name: str) -> ConcurrencyRestoreInfo:
    return _lookup(ConcurrencyRestoreInfo, clients, lambda_name, _concurrency_restore_info)


def _concurrency_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> ConcurrencyRestoreInfo:
    now, before = current.reserved_concurrency, baseline.configuration.reserved_concurrency
    action = "none" if now == before else ("delete" if before is None else "put")
    actions = []
    if action != "none":
        actions.append(
            ProposedUpdateConcurrency(
                fault_type=FaultType.THROTTLING,
                action_type=ActionType.UPDATE_CONCURRENCY,
                target_resource=baseline.function_arn or name,
                parameters=UpdateConcurrencyParams(function_name=name, reserved_concurrent_executions=before),
                reasoning=f"reserved concurrency {now} -> baseline "
                + ("none (delete the reservation)" if before is None else str(before)),
            )
        )
    return ConcurrencyRestoreInfo(
        function_name=name,
        current_reserved=now,
        baseline_reserved=before,
        action=action,
        baseline_captured_at=baseline.captured_at,
        actions=actions,
    )


# -- network --------------------------------------------------------------------------------------
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
    for group in groups:
        rules = [
            {k: v for k, v in rule.items() if k in SG_RULE_FIELDS and v not in (None, [])}
            for rule in group.missing_egress_rules
        ]
        if rules:
            actions.append(
                ProposedRestoreNetworkEgress(
                    fault_type=FaultType.NETWORK_BLOCK,
                    action_type=ActionType.RESTORE_NETWORK_EGRESS,
                    target_resource=group.security_group_id,
                    parameters=RestoreNetworkEgressParams(
                        security_group_id=group.security_group_id, ip_permissions=rules
                    ),
                    reasoning=f"{len(rules)} baseline egress rule(s) missing from {group.security_group_id}",
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


# -- function configuration -----------------------------------------------------------------------
class FunctionConfigRestoreInfo(BaseModel):
    function_name: str
    current_timeout: int | None = None
    baseline_timeout: int | None = None
    current_memory_size: int | None = None
    baseline_memory_size: int | None = None
    changes: dict[str, int] = Field(
        default_factory=dict, description="UpdateFunctionConfiguration arguments that restore the baseline"
    )
    baseline_captured_at: str | None = None
    actions: list[ProposedAction] = Field(
        default_factory=list, description=ACTIONS_DESCRIPTION + " (timeout and memory each for its own fault)"
    )
    error: str | None = None


def get_function_config_restore_info(clients: AwsClients, lambda_name: str) -> FunctionConfigRestoreInfo:
    return _lookup(FunctionConfigRestoreInfo, clients, lambda_name, _function_config_restore_info)


def _function_config_restore_info(
    name: str, current: FunctionConfiguration, baseline: Baseline
) -> FunctionConfigRestoreInfo:
    base = baseline.configuration
    changes = {}
    if current.timeout != base.timeout:
        changes["Timeout"] = base.timeout
    if current.memory_size != base.memory_size:
        changes["MemorySize"] = base.memory_size
    target = baseline.function_arn or name
    actions = []
    if "Timeout" in changes:
        actions.append(
            ProposedUpdateFunctionConfiguration(
                fault_type=FaultType.TIMEOUT,
                action_type=ActionType.UPDATE_FUNCTION_CONFIGURATION,
                target_resource=target,
                parameters=UpdateFunctionConfigurationParams(function_name=name, timeout=base.timeout),
                reasoning=f"timeout {current.timeout} s -> baseline {base.timeout} s",
            )
        )
    if "MemorySize" in changes:
        actions.append(
            ProposedUpdateFunctionConfiguration(
                fault_type=FaultType.MEMORY_EXHAUSTION,
                action_type=ActionType.UPDATE_FUNCTION_CONFIGURATION,
                target_resource=target,
                parameters=UpdateFunctionConfigurationParams(function_name=name, memory_size=base.memory_size),
                reasoning=f"memory {current.memory_size} MB -> baseline {base.memory_size} MB",
            )
        )
    return FunctionConfigRestoreInfo(
        function_name=name,
        current_timeout=current.timeout,
        baseline_timeout=base.timeout,
        current_memory_size=current.memory_size,
        baseline_memory_size=base.memory_size,
        changes=changes,
        baseline_captured_at=baseline.captured_at,
        actions=actions,
    )
