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

from incident_responder.account.baseline import Baseline, BaselineNotFoundError, event_source_mapping_arn, load_baseline
from incident_responder.account.iam_policy import statements
from incident_responder.account.state import FunctionConfiguration, function_name_of, read_function_configuration
from incident_responder.account.vetting import refusals
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    EnableEventSourceMappingParams,
    EnableKmsKeyParams,
    FaultType,
    NaclEntry,
    ProposedAction,
    ProposedEnableEventSourceMapping,
    ProposedEnableKmsKey,
    ProposedRestoreIamPolicy,
    ProposedRestoreNetworkEgress,
    ProposedRestoreQueueAttributes,
    ProposedRestoreSecret,
    ProposedRollbackAlias,
    ProposedUpdateConcurrency,
    ProposedUpdateFunctionConfiguration,
    RestoreIamPolicyParams,
    RestoreNetworkEgressParams,
    RestoreQueueAttributesParams,
    RestoreSecretParams,
    RollbackAliasParams,
    UpdateConcurrencyParams,
    UpdateFunctionConfigurationParams,
)
from incident_responder.investigation.diagnostics import AWS_ERRORS, describe_error
from incident_responder.proposal.guardrails import version_code_sha256

ACTIONS_DESCRIPTION = "ready-made actions for submit_proposal: copy them, adding your own reasoning"
NOT_RESTORABLE_DESCRIPTION = (
    "restores the responder will not make, with why (the baseline's value grants wildcard or administrator access, "
    "stops the function or is below a floor): name them for a person instead of proposing them"
)
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
    info = compute(name, current, baseline)
    # Never offered: a restore of a value the baseline's vetting refuses (the guardrails would refuse it too).
    offered, refused, not_restorable = [], [], baseline.not_restorable_paths()
    for action in info.actions:
        reasons = refusals(action, not_restorable)
        if reasons:
            refused.append(f"{action.action_type.value} on {action.target_resource}: {'; '.join(reasons)}")
        else:
            offered.append(action)
    return info.model_copy(update={"actions": offered, "not_restorable": refused}) if refused else info


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
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
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
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
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
    current_ephemeral_storage: int | None = Field(default=None, description="/tmp size in MB now")
    baseline_ephemeral_storage: int | None = Field(
        default=None, description="/tmp size in MB the baseline recorded (None: not recorded)"
    )
    changes: dict[str, Any] = Field(
        default_factory=dict, description="UpdateFunctionConfiguration arguments that restore the baseline"
    )
    refused: list[str] = Field(
        default_factory=list, description="differences from the baseline no restore is proposed for, with why"
    )
    baseline_captured_at: str | None = None
    actions: list[ProposedAction] = Field(
        default_factory=list,
        description=ACTIONS_DESCRIPTION + " (timeout, memory and ephemeral storage each for its own fault)",
    )
    error: str | None = None


def get_function_config_restore_info(clients: AwsClients, lambda_name: str) -> FunctionConfigRestoreInfo:
    return _lookup(FunctionConfigRestoreInfo, clients, lambda_name, _function_config_restore_info)


def _function_config_restore_info(
    name: str, current: FunctionConfiguration, baseline: Baseline
) -> FunctionConfigRestoreInfo:
    base = baseline.configuration
    changes: dict[str, Any] = {}
    refused = []
    if current.timeout != base.timeout:
        changes["Timeout"] = base.timeout
    if current.memory_size != base.memory_size:
        changes["MemorySize"] = base.memory_size
    # /tmp: restored only when it is smaller than recorded (a larger /tmp exhausts nothing) and was recorded at all.
    storage_now, storage_before = current.ephemeral_storage, base.ephemeral_storage
    if storage_before is not None and storage_now is not None and storage_now != storage_before:
        if storage_now < storage_before:
            changes["EphemeralStorage"] = {"Size": storage_before}
        else:
            refused.append(
                f"ephemeral storage is {storage_now} MB, more than the baseline's {storage_before} MB: "
                "a larger /tmp exhausts nothing, so it is not shrunk back"
            )
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
    if "EphemeralStorage" in changes:
        actions.append(
            ProposedUpdateFunctionConfiguration(
                fault_type=FaultType.STORAGE_EXHAUSTION,
                action_type=ActionType.UPDATE_FUNCTION_CONFIGURATION,
                target_resource=target,
                parameters=UpdateFunctionConfigurationParams(function_name=name, ephemeral_storage=storage_before),
                reasoning=f"ephemeral storage (/tmp) {storage_now} MB -> baseline {storage_before} MB",
            )
        )
    return FunctionConfigRestoreInfo(
        function_name=name,
        current_timeout=current.timeout,
        baseline_timeout=base.timeout,
        current_memory_size=current.memory_size,
        baseline_memory_size=base.memory_size,
        current_ephemeral_storage=storage_now,
        baseline_ephemeral_storage=storage_before,
        changes=changes,
        refused=refused,
        baseline_captured_at=baseline.captured_at,
        actions=actions,
    )


# -- alias (a deployment regression) --------------------------------------------------------------
class AliasRestore(BaseModel):
    alias_name: str
    current_version: str | None = Field(description="the version the alias routes to now (None: the alias is gone)")
    baseline_version: str
    current_code_sha256: str | None = None
    baseline_code_sha256: str | None = Field(default=None, description="the code hash recorded for baseline_version")
    baseline_version_code_sha256_now: str | None = Field(
        default=None, description="what Lambda reports for baseline_version now (None: that version no longer exists)"
    )
    refused: str | None = Field(default=None, description="why no rollback is proposed for this alias, when none is")


class AliasRestoreInfo(BaseModel):
    function_name: str
    drifted: bool = False
    baseline_captured_at: str | None = None
    aliases: list[AliasRestore] = Field(default_factory=list, description="aliases that route elsewhere than recorded")
    not_in_baseline: list[str] = Field(default_factory=list, description="aliases the baseline lacks (left alone)")
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def get_alias_restore_info(clients: AwsClients, lambda_name: str) -> AliasRestoreInfo:
    def compute(name: str, current: FunctionConfiguration, baseline: Baseline) -> AliasRestoreInfo:
        try:
            return _alias_restore_info(clients, name, current, baseline)
        except AWS_ERRORS as exc:
            return AliasRestoreInfo(function_name=name, error=describe_error(exc))

    return _lookup(AliasRestoreInfo, clients, lambda_name, compute)


def _alias_restore_info(
    clients: AwsClients, name: str, current: FunctionConfiguration, baseline: Baseline
) -> AliasRestoreInfo:
    now = {a.name: a for a in current.aliases}
    restores, actions = [], []
    for base in baseline.configuration.aliases:
        alias = now.get(base.name)
        if alias is not None and alias.function_version == base.function_version:
            continue
        restore = AliasRestore(
            alias_name=base.name,
            current_version=alias.function_version if alias else None,
            baseline_version=base.function_version,
            current_code_sha256=alias.code_sha256 if alias else None,
            baseline_code_sha256=base.code_sha256,
        )
        restores.append(restore)
        if alias is None:
            restore.refused = "the alias no longer exists: re-creating it is not an action the responder takes"
            continue
        restore.baseline_version_code_sha256_now = version_code_sha256(clients, name, base.function_version)
        if restore.baseline_version_code_sha256_now is None:
            restore.refused = f"baseline version {base.function_version} no longer exists: nothing to roll back to"
        elif base.code_sha256 is None or restore.baseline_version_code_sha256_now != base.code_sha256:
            # Same number, other code: the function was re-created since onboarding. Never route traffic there.
            restore.refused = (
                f"version {base.function_version}'s code hash is not the one the baseline recorded: "
                "it is not the code the function ran when it was onboarded"
            )
        if restore.refused:
            continue
        arn = f"{baseline.function_arn}:{base.name}" if baseline.function_arn else name
        actions.append(
            ProposedRollbackAlias(
                fault_type=FaultType.DEPLOYMENT_REGRESSION,
                action_type=ActionType.ROLLBACK_ALIAS,
                target_resource=arn,
                parameters=RollbackAliasParams(
                    function_name=name, alias_name=base.name, function_version=base.function_version
                ),
                reasoning=f"alias {base.name} routes to version {alias.function_version}; the baseline version is "
                f"{base.function_version} (same code hash as recorded)",
            )
        )
    recorded = {a.name for a in baseline.configuration.aliases}
    return AliasRestoreInfo(
        function_name=name,
        drifted=bool(restores),
        baseline_captured_at=baseline.captured_at,
        aliases=restores,
        not_in_baseline=sorted(set(now) - recorded),
        actions=actions,
    )


# -- KMS keys -------------------------------------------------------------------------------------
class KeyRestore(BaseModel):
    key_arn: str
    current_state: str | None = Field(
        description="KeyState now (None: the function's configuration no longer names it)"
    )
    baseline_state: str | None = Field(description="KeyState recorded at onboarding (None: not recorded)")
    refused: str | None = Field(default=None, description="why EnableKey is not proposed for this key, when it is not")


class KmsRestoreInfo(BaseModel):
    function_name: str
    drifted: bool = False
    baseline_captured_at: str | None = None
    keys: list[KeyRestore] = Field(default_factory=list, description="the function's keys whose state differs")
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def get_kms_restore_info(clients: AwsClients, lambda_name: str) -> KmsRestoreInfo:
    return _lookup(KmsRestoreInfo, clients, lambda_name, _kms_restore_info)


def _kms_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> KmsRestoreInfo:
    before = {k.key_arn: k for k in baseline.configuration.kms_keys}
    now = {k.key_arn: k for k in current.kms_keys}
    keys, actions = [], []
    for arn in sorted(set(before) | set(now)):
        base, key = before.get(arn), now.get(arn)
        if base is not None and key is not None and base.key_state == key.key_state:
            continue
        restore = KeyRestore(
            key_arn=arn, current_state=key.key_state if key else None, baseline_state=base.key_state if base else None
        )
        keys.append(restore)
        if key is None:
            restore.refused = "the function's configuration no longer names this key: not a key state to restore"
        elif base is None:
            restore.refused = "the baseline did not record this key: only keys recorded at onboarding are enabled"
        elif base.key_state != "Enabled":
            restore.refused = f"the baseline recorded it {base.key_state}, not Enabled"
        elif key.key_state == "PendingDeletion":
            restore.refused = "it is scheduled for deletion: cancelling that (CancelKeyDeletion) is a person's decision"
        elif key.key_state != "Disabled":
            restore.refused = f"it is {key.key_state}: EnableKey restores only a Disabled key"
        else:
            actions.append(
                ProposedEnableKmsKey(
                    fault_type=FaultType.KMS_KEY_DISABLED,
                    action_type=ActionType.ENABLE_KMS_KEY,
                    target_resource=arn,
                    parameters=EnableKmsKeyParams(key_arn=arn),
                    reasoning="the key encrypting the function's environment is Disabled; the baseline recorded "
                    "it Enabled (it may have been disabled on purpose: a person should confirm)",
                )
            )
    return KmsRestoreInfo(
        function_name=name,
        drifted=bool(keys),
        baseline_captured_at=baseline.captured_at,
        keys=keys,
        actions=actions,
    )


# -- event source mappings -------------------------------------------------------------------------
# Lambda reports a mapping it is turning on as Enabling for a few seconds: that is not drift.
ENABLED_STATES = ("Enabled", "Enabling")


class MappingRestore(BaseModel):
    uuid: str
    event_source_arn: str
    current_state: str | None = Field(description="State now (None: it no longer invokes the function)")
    baseline_state: str | None
    refused: str | None = Field(default=None, description="why enabling is not proposed, when it is not")


class EventSourceRestoreInfo(BaseModel):
    function_name: str
    drifted: bool = False
    baseline_captured_at: str | None = None
    mappings: list[MappingRestore] = Field(
        default_factory=list, description="the function's mappings whose state differs"
    )
    not_in_baseline: list[str] = Field(
        default_factory=list, description="mapping UUIDs the baseline lacks (left alone)"
    )
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def get_event_source_restore_info(clients: AwsClients, lambda_name: str) -> EventSourceRestoreInfo:
    return _lookup(EventSourceRestoreInfo, clients, lambda_name, _event_source_restore_info)


def _event_source_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> EventSourceRestoreInfo:
    now = {m.uuid: m for m in current.event_source_mappings}
    mappings, actions = [], []
    for base in baseline.configuration.event_source_mappings:
        mapping = now.get(base.uuid)
        state = mapping.state if mapping else None
        if state == base.state or (base.state == "Enabled" and state in ENABLED_STATES):
            continue
        restore = MappingRestore(
            uuid=base.uuid, event_source_arn=base.event_source_arn, current_state=state, baseline_state=base.state
        )
        mappings.append(restore)
        if base.state != "Enabled":
            restore.refused = f"the baseline recorded it {base.state}: only mappings enabled then are enabled"
        elif mapping is None:
            restore.refused = "it no longer invokes the function (deleted or moved): re-creating it is for a person"
        elif state != "Disabled":
            restore.refused = f"it is {state}: look again once Lambda has settled it"
        else:
            target = event_source_mapping_arn(baseline.function_arn, base.uuid) if baseline.function_arn else base.uuid
            actions.append(
                ProposedEnableEventSourceMapping(
                    fault_type=FaultType.EVENT_SOURCE_DISABLED,
                    action_type=ActionType.ENABLE_EVENT_SOURCE_MAPPING,
                    target_resource=target,
                    parameters=EnableEventSourceMappingParams(function_name=name, uuid=base.uuid),
                    reasoning=f"the mapping from {base.event_source_arn} is Disabled; the baseline recorded it Enabled",
                )
            )
    return EventSourceRestoreInfo(
        function_name=name,
        drifted=bool(mappings),
        baseline_captured_at=baseline.captured_at,
        mappings=mappings,
        not_in_baseline=sorted(set(now) - {m.uuid for m in baseline.configuration.event_source_mappings}),
        actions=actions,
    )


# -- secrets the environment names (a dependency scheduled for deletion) --------------------------------
class SecretRestore(BaseModel):
    secret_arn: str
    variable: str = Field(description="the environment variable whose value names the secret")
    current_state: str = Field(
        description="scheduled_for_deletion, deleted (gone for good), not_named (the configuration no longer names "
        "it) or available"
    )
    deleted_date: str | None = Field(default=None, description="when Secrets Manager deletes it, while scheduled")
    baseline_state: str = Field(description="as the baseline recorded it: available, scheduled_for_deletion or deleted")
    refused: str | None = Field(default=None, description="why RestoreSecret is not proposed, when it is not")


class SecretRestoreInfo(BaseModel):
    function_name: str
    drifted: bool = False
    baseline_captured_at: str | None = None
    secrets: list[SecretRestore] = Field(
        default_factory=list, description="the secrets the function's environment names whose state differs"
    )
    not_in_baseline: list[str] = Field(
        default_factory=list, description="secrets the environment names that the baseline lacks (left alone)"
    )
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def _secret_state(secret: Any) -> str:
    if secret is None:
        return "not_named"
    if not secret.exists:
        return "deleted"
    return "scheduled_for_deletion" if secret.deleted_date else "available"


def get_secret_restore_info(clients: AwsClients, lambda_name: str) -> SecretRestoreInfo:
    return _lookup(SecretRestoreInfo, clients, lambda_name, _secret_restore_info)


def _secret_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> SecretRestoreInfo:
    now = {s.secret_arn: s for s in current.secrets}
    restores, actions = [], []
    for base in baseline.configuration.secrets:
        secret = now.get(base.secret_arn)
        state, before = _secret_state(secret), _secret_state(base)
        if state == before:
            continue
        restore = SecretRestore(
            secret_arn=base.secret_arn,
            variable=base.variable,
            current_state=state,
            deleted_date=secret.deleted_date if secret else None,
            baseline_state=before,
        )
        restores.append(restore)
        if before != "available":
            restore.refused = (
                f"the baseline recorded it {before.replace('_', ' ')}: only a secret available then is restored"
            )
        elif state == "not_named":
            restore.refused = "the function's environment no longer names it: not a secret of this function to restore"
        elif state == "deleted":
            restore.refused = (
                "it no longer exists (deleted for good once its recovery window ended): RestoreSecret cannot bring it "
                "back; a person re-creates it and its value"
            )
        elif state == "scheduled_for_deletion":
            actions.append(
                ProposedRestoreSecret(
                    fault_type=FaultType.DEPENDENCY_MISSING,
                    action_type=ActionType.RESTORE_SECRET,
                    target_resource=base.secret_arn,
                    parameters=RestoreSecretParams(secret_arn=base.secret_arn),
                    reasoning=f"the secret {base.variable} names is scheduled for deletion (on {secret.deleted_date}); "
                    "the baseline recorded it available (its deletion may have been scheduled on purpose: a person "
                    "should confirm)",
                )
            )
    return SecretRestoreInfo(
        function_name=name,
        drifted=bool(restores),
        baseline_captured_at=baseline.captured_at,
        secrets=restores,
        not_in_baseline=sorted(set(now) - {s.secret_arn for s in baseline.configuration.secrets}),
        actions=actions,
    )


# -- the queues the function's event source mappings read -------------------------------------------
class QueueRestore(BaseModel):
    uuid: str = Field(description="the event source mapping that reads the queue")
    queue_arn: str
    current_visibility_timeout: int | None = Field(description="VisibilityTimeout now, in seconds (None: unreadable)")
    baseline_visibility_timeout: int
    function_timeout: int = Field(description="the function's timeout now, in seconds")
    refused: str | None = Field(default=None, description="why SetQueueAttributes is not proposed, when it is not")


class QueueRestoreInfo(BaseModel):
    function_name: str
    drifted: bool = False
    baseline_captured_at: str | None = None
    queues: list[QueueRestore] = Field(
        default_factory=list, description="the function's source queues whose visibility timeout differs"
    )
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def get_queue_restore_info(clients: AwsClients, lambda_name: str) -> QueueRestoreInfo:
    return _lookup(QueueRestoreInfo, clients, lambda_name, _queue_restore_info)


def _queue_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> QueueRestoreInfo:
    now = {m.uuid: m for m in current.event_source_mappings}
    queues, actions, seen = [], [], set()
    for base in baseline.configuration.event_source_mappings:
        if base.queue_visibility_timeout is None or base.event_source_arn in seen:
            continue  # not a queue, or recorded before queues were; one restore per queue
        mapping = now.get(base.uuid)
        visibility = mapping.queue_visibility_timeout if mapping else None
        if mapping is not None and visibility == base.queue_visibility_timeout:
            continue
        seen.add(base.event_source_arn)
        restore = QueueRestore(
            uuid=base.uuid,
            queue_arn=base.event_source_arn,
            current_visibility_timeout=visibility,
            baseline_visibility_timeout=base.queue_visibility_timeout,
            function_timeout=current.timeout,
        )
        queues.append(restore)
        if mapping is None or mapping.event_source_arn != base.event_source_arn:
            restore.refused = "the function's mapping no longer reads this queue: not a queue of this function now"
        elif visibility is None:
            restore.refused = "the queue's attributes cannot be read now: look again"
        elif base.queue_visibility_timeout < current.timeout:
            restore.refused = (
                f"the baseline's {base.queue_visibility_timeout} s is shorter than the function's timeout "
                f"({current.timeout} s): restoring it would leave messages redelivered while still in flight"
            )
        else:
            actions.append(
                ProposedRestoreQueueAttributes(
                    fault_type=FaultType.EVENT_SOURCE_MISCONFIGURED,
                    action_type=ActionType.RESTORE_QUEUE_ATTRIBUTES,
                    target_resource=base.event_source_arn,
                    parameters=RestoreQueueAttributesParams(
                        queue_arn=base.event_source_arn, visibility_timeout=base.queue_visibility_timeout
                    ),
                    reasoning=f"the visibility timeout of the queue the function reads is {visibility} s; the baseline "
                    f"recorded {base.queue_visibility_timeout} s (the function's timeout is {current.timeout} s)",
                )
            )
    return QueueRestoreInfo(
        function_name=name,
        drifted=bool(queues),
        baseline_captured_at=baseline.captured_at,
        queues=queues,
        actions=actions,
    )
