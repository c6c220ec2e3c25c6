"""Deterministic guardrails on a remediation proposal, applied after the model, whatever it said.

An action survives only if its type is allowed, it remedies a fault the diagnosis contains, it is not
a duplicate, its ``target_resource`` names what its parameters change, that is the incident's own
function, role, security group, NACL, alias, KMS key or event source mapping, and it restores exactly
the recorded baseline: concurrency, timeout and memory equal to the baseline's (a lower value is no
restore either), statements only from the baseline document (never from the current policy, which is
what an attacker could have changed), managed policies the baseline attached, egress rules from the
baseline, NACL removals only of entries the baseline lacks, an alias recorded in the baseline pointed
back at the version it had then, the key the function's configuration names and the baseline recorded
Enabled, a mapping of the function's recorded Enabled in the baseline, a secret the baseline recorded
available (named by the function's environment) whose deletion is scheduled now, the visibility timeout
the baseline recorded on a queue one of the function's own recorded mappings reads, and ephemeral storage
equal to the baseline's while it is below it now. Ground truth is read here from the account and the
baseline table, never taken from the model or the tool results it saw. Risk and approval are set here by
policy; so are rejections: anything the model put in ``rejected_actions`` is dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from botocore.exceptions import ClientError
from pydantic import ValidationError

from incident_responder.account.baseline import diff_configurations
from incident_responder.account.iam_policy import statements
from incident_responder.account.state import FunctionConfiguration, function_name_of, queue_url_of
from incident_responder.account.vetting import refusals
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    EnableEventSourceMappingParams,
    EnableKmsKeyParams,
    FaultType,
    RejectedAction,
    RemediationAction,
    RemediationProposal,
    RestoreIamPolicyParams,
    RestoreNetworkEgressParams,
    RestoreQueueAttributesParams,
    RestoreSecretParams,
    RollbackAliasParams,
    UpdateConcurrencyParams,
    UpdateFunctionConfigurationParams,
)

ALLOWED_ACTIONS = set(ActionType)
# Set by policy, never by the model: what an action could break if it were wrong. Access and network
# changes are high risk (a wrong one opens or closes what the function can reach), and so are enabling a
# key and cancelling a secret's deletion (someone may have disabled or scheduled it on purpose, e.g. after
# a compromise); moving traffic back to the baseline version, resuming a queue's delivery and changing
# when a queue redelivers change what runs and when: medium; putting a function's own limits back to
# their baseline values is low. Only low-risk actions may skip a person, and only when the deployment
# says so (AutoApprove=low); see incident_responder.review.review.
RISK_FOR_ACTION = {
    ActionType.RESTORE_IAM_POLICY: "high",
    ActionType.RESTORE_NETWORK_EGRESS: "high",
    ActionType.ENABLE_KMS_KEY: "high",
    ActionType.RESTORE_SECRET: "high",
    ActionType.ROLLBACK_ALIAS: "medium",
    ActionType.ENABLE_EVENT_SOURCE_MAPPING: "medium",
    ActionType.RESTORE_QUEUE_ATTRIBUTES: "medium",
    ActionType.UPDATE_CONCURRENCY: "low",
    ActionType.UPDATE_FUNCTION_CONFIGURATION: "low",
}
# Lambda reports a mapping it is turning on as Enabling for a few seconds before Enabled.
ENABLED_STATES = ("Enabled", "Enabling")


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


def _names(target: str, kind: str, identifiers: Iterable[str]) -> bool:
    """Whether ``target`` is one of ``identifiers``, or an ARN of that ``kind`` naming one of them."""
    ids = {i for i in identifiers if i}
    if target in ids:
        return True
    if kind == "function":
        try:
            return function_name_of(target) in ids
        except ValueError:
            return False
    if kind == "kms":
        # The key's ARN, or its id (the last segment of the ARN); an alias ARN names no key.
        return any(target == i.rsplit("/", 1)[-1] and ":" not in target for i in ids)
    if kind == "esm":
        # arn:aws:lambda:REGION:ACCOUNT:event-source-mapping:UUID
        parts = target.split(":")
        return len(parts) == 7 and parts[2] == "lambda" and parts[5] == "event-source-mapping" and parts[6] in ids
    if kind == "sqs":
        # The queue's ARN (matched above) or its URL, as SQS names a queue.
        return any(target == queue_url_of(i) for i in ids if i.count(":") == 5)
    if kind == "secret":
        return False  # the full ARN only (matched above): a name or partial ARN may name another secret
    # role/[path/]NAME, security-group/ID, network-acl/ID: the last path segment names the resource.
    service = {"role": ":iam::", "ec2": ":ec2:"}[kind]
    return target.startswith("arn:") and service in target and target.rsplit("/", 1)[-1] in ids


def _target_reason(action: RemediationAction, names: str, kind: str, identifiers: Iterable[str]) -> list[str]:
    if _names(action.target_resource, kind, identifiers):
        return []
    return [f"target_resource {action.target_resource[:200]} does not name {names} the parameters change"]


def check_action(
    action: RemediationAction,
    current: FunctionConfiguration,
    baseline: FunctionConfiguration,
    clients: AwsClients | None = None,
    qualifier: str | None = None,
    not_restorable: Mapping[str, str] | None = None,
) -> list[str]:
    """Reasons to reject the action; empty when it may be proposed. Never raises on model output.

    Whatever the baseline holds, an action that would grant wildcard or administrator access, set concurrency
    to 0 or go below the timeout and memory floors is refused (:mod:`incident_responder.account.vetting`), as
    is one restoring a value ``not_restorable`` (the baseline's own verdicts, by path) names.

    With ``clients``, a rollback's target version is also read from the account: it must still hold the
    code the baseline recorded (a function re-created since onboarding numbers its versions again).
    AWS errors of that read propagate. ``qualifier``: the alias or version the incident's alarm named; an
    action must reach what runs behind it (:func:`_check_qualifier`).
    """
    return (
        _check_home(action, current, clients)
        or refusals(action, not_restorable) + _check(action, current, baseline, clients)
        or _check_drift(action, current, baseline)
        or _check_qualifier(action, current, qualifier)
    )


def drift_paths(params: Any, current: FunctionConfiguration) -> list[str]:
    """Where, in drift's terms, the difference an action restores must show (see baseline.diff_configurations)."""
    if isinstance(params, RestoreIamPolicyParams):
        if params.attach_policy_arn is not None:
            return ["role.attached_policy_arns"]  # a list drift compares whole: _check_drift looks at the ARN itself
        return [f"role.inline_policies.{params.policy_name}"]
    if isinstance(params, UpdateConcurrencyParams):
        return ["reserved_concurrency"]
    if isinstance(params, UpdateFunctionConfigurationParams):
        fields = (("timeout", params.timeout), ("memory_size", params.memory_size))
        return [f for f, v in (*fields, ("ephemeral_storage", params.ephemeral_storage)) if v is not None]
    if isinstance(params, RestoreNetworkEgressParams):
        acls = {e.network_acl_id for e in params.remove_nacl_entries}
        subnets = [f"network.subnets.{s.subnet_id}" for s in current.network.subnets if s.network_acl_id in acls]
        return ([f"network.security_groups.{params.security_group_id}"] if params.ip_permissions else []) + subnets
    if isinstance(params, RollbackAliasParams):
        return [f"aliases.{params.alias_name}"]
    if isinstance(params, EnableKmsKeyParams):
        return [f"kms_keys.{params.key_arn}"]
    if isinstance(params, EnableEventSourceMappingParams):
        return [f"event_source_mappings.{params.uuid}"]
    if isinstance(params, RestoreSecretParams):
        return [f"secrets.{params.secret_arn}.deleted_date"]
    if isinstance(params, RestoreQueueAttributesParams):
        return [
            f"event_source_mappings.{m.uuid}.queue_visibility_timeout"
            for m in current.event_source_mappings
            if m.event_source_arn == params.queue_arn
        ]
    return []


def _check_drift(
    action: RemediationAction, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    """Evidence for a change comes from the account: the value it restores must differ from the baseline now.

    A log line or an alarm's text (which anyone who can make the function fail can write) may explain a
    diagnosis; it never justifies a change by itself."""
    params = action.typed_parameters()
    if isinstance(params, RestoreIamPolicyParams) and params.attach_policy_arn is not None:
        if params.attach_policy_arn in current.role.attached_policy_arns:
            return [f"{params.attach_policy_arn} is attached now: no difference from the baseline supports this"]
        return []
    paths = drift_paths(params, current)
    drifted = [d.path for d in diff_configurations(baseline, current)]
    if any(d == p or d.startswith(p + ".") for p in paths for d in drifted):
        return []
    return [
        f"no difference between the account and its baseline supports this ({', '.join(paths) or 'nothing'} "
        "equal the baseline): text in logs or alarms never justifies a change by itself"
    ]


def _check_home(action: RemediationAction, current: FunctionConfiguration, clients: AwsClients | None) -> list[str]:
    """A target given as an ARN must be in this partition and account (the function's role's) and, for a regional
    service, this Region (the clients'): names are compared further on, and a person is shown the ARN."""
    target = action.target_resource
    if not target.startswith("arn:"):
        return []
    parts = target.split(":")
    home = current.role.role_arn.split(":")
    if len(parts) < 6 or len(home) < 6:
        return [f"target_resource {target[:200]} is not an ARN of this account"]
    region = clients.get("lambda").meta.region_name if clients is not None else None
    said = []
    if parts[1] != home[1]:
        said.append(f"partition {parts[1]}, not this partition {home[1]}")
    if parts[4] != home[4]:
        said.append(f"account {parts[4]}, not this account {home[4]}")
    if parts[3] and region and parts[3] != region:
        said.append(f"Region {parts[3]}, not this Region {region}")
    return [f"target_resource {target[:200]} names {'; '.join(said)}"] if said else []


def _check_qualifier(action: RemediationAction, current: FunctionConfiguration, qualifier: str | None) -> list[str]:
    """An alarm on an alias or version is about the version that runs behind it: rolling back another alias,
    or changing $LATEST's settings when a published version runs (its settings cannot change), fixes nothing."""
    if not qualifier:
        return []
    params = action.typed_parameters()
    version = qualifier == "$LATEST" or qualifier.isdigit()  # an alias name is never all digits
    routes = {a.name: a.function_version for a in current.aliases}
    runs = qualifier if version else routes.get(qualifier)
    named = f"the alarm named {'version' if version else 'alias'} {qualifier}"
    if isinstance(params, RollbackAliasParams):
        if not version and params.alias_name != qualifier:
            return [f"{named}: rolling back alias {params.alias_name} does not change what fails behind it"]
        routes_to = routes.get(params.alias_name)
        if version and routes_to != qualifier:
            return [
                f"{named}, and alias {params.alias_name} routes to {routes_to}: rolling it back fixes nothing there"
            ]
    if isinstance(params, UpdateFunctionConfigurationParams) and runs not in (None, "$LATEST"):
        return [
            f"{named}, which runs published version {runs}: a published version's settings cannot change, so "
            "changing $LATEST's does not reach it; publish a version with the baseline's settings and point the "
            "alias at it (a person's decision)"
        ]
    return []


def _check(
    action: RemediationAction,
    current: FunctionConfiguration,
    baseline: FunctionConfiguration,
    clients: AwsClients | None = None,
) -> list[str]:
    if action.action_type not in ALLOWED_ACTIONS:
        return [f"action type {action.action_type} is not allowed"]
    parameters = action.parameters if isinstance(action.parameters, dict) else {}
    if action.action_type == ActionType.ROLLBACK_ALIAS and str(parameters.get("function_version")).upper() == "$LATEST":
        return ["$LATEST is never a rollback target: an alias goes back to its baseline's published version"]
    try:
        params = action.typed_parameters()
    except (ValidationError, TypeError, KeyError) as exc:
        return [f"parameters do not match {action.action_type}: {str(exc)[:300]}"]
    if isinstance(params, UpdateConcurrencyParams):
        return _target_reason(action, "the function", "function", [params.function_name]) + _check_concurrency(
            params, current, baseline
        )
    if isinstance(params, UpdateFunctionConfigurationParams):
        return (
            _target_reason(action, "the function", "function", [params.function_name])
            + _check_storage_fault(action, params)
            + _check_configuration(params, current, baseline)
        )
    if isinstance(params, RestoreIamPolicyParams):
        return _target_reason(action, "the role", "role", [params.role_name]) + _check_iam(params, current, baseline)
    if isinstance(params, RestoreNetworkEgressParams):
        changed = [params.security_group_id or ""] + [e.network_acl_id for e in params.remove_nacl_entries]
        return _target_reason(action, "a security group or NACL", "ec2", changed) + _check_network(
            params, current, baseline
        )
    if isinstance(params, RollbackAliasParams):
        return _alias_target_reason(action, params) + _check_alias(params, current, baseline, clients)
    if isinstance(params, EnableKmsKeyParams):
        return _target_reason(action, "the key", "kms", [params.key_arn]) + _check_kms(params, current, baseline)
    if isinstance(params, EnableEventSourceMappingParams):
        return _target_reason(action, "the event source mapping", "esm", [params.uuid]) + _check_event_source(
            params, current, baseline
        )
    if isinstance(params, RestoreSecretParams):
        return _target_reason(action, "the secret", "secret", [params.secret_arn]) + _check_secret(
            params, current, baseline
        )
    if isinstance(params, RestoreQueueAttributesParams):
        return _target_reason(action, "the queue", "sqs", [params.queue_arn]) + _check_queue(params, current, baseline)
    return [f"no guardrail knows {action.action_type}"]


def _alias_target_reason(action: RemediationAction, p: RollbackAliasParams) -> list[str]:
    """The function (name or ARN), or the ARN qualified with this alias; never another qualifier."""
    target = action.target_resource
    try:
        named = function_name_of(target) == p.function_name
    except ValueError:
        named = False
    qualifier = target.split(":")[7] if target.startswith("arn:") and target.count(":") == 7 else p.alias_name
    if named and qualifier == p.alias_name:
        return []
    return [f"target_resource {target[:200]} does not name the function or its alias {p.alias_name}"]


def _other_function(function_name: str, current: FunctionConfiguration) -> list[str]:
    if function_name == current.function_name:
        return []
    return [f"targets function {function_name}, not the incident's function {current.function_name}"]


def _check_concurrency(
    p: UpdateConcurrencyParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    reasons = _other_function(p.function_name, current)
    before = baseline.reserved_concurrency
    if p.reserved_concurrent_executions != before:
        shown = "no reservation" if before is None else before
        reasons.append(f"reserved concurrency must equal the baseline ({shown}): anything else is not a restore")
    elif current.reserved_concurrency == before:
        reasons.append("reserved concurrency already equals the baseline: nothing to restore")
    return reasons


def _check_storage_fault(action: RemediationAction, p: UpdateFunctionConfigurationParams) -> list[str]:
    """Ephemeral storage is restored for storage_exhaustion only, and that fault's action changes nothing else."""
    if p.ephemeral_storage is not None and action.fault_type != FaultType.STORAGE_EXHAUSTION:
        return [f"ephemeral storage restores /tmp, which does not remedy {action.fault_type}"]
    if action.fault_type == FaultType.STORAGE_EXHAUSTION and (
        p.ephemeral_storage is None or p.timeout is not None or p.memory_size is not None
    ):
        return ["storage_exhaustion is remedied by ephemeral storage alone, not by timeout or memory"]
    return []


def _check_configuration(
    p: UpdateFunctionConfigurationParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    reasons = _other_function(p.function_name, current)
    if p.timeout is not None and p.timeout != baseline.timeout:
        reasons.append(f"timeout {p.timeout} s must equal the baseline {baseline.timeout} s")
    if p.memory_size is not None and p.memory_size != baseline.memory_size:
        reasons.append(f"memory {p.memory_size} MB must equal the baseline {baseline.memory_size} MB")
    if p.ephemeral_storage is not None:
        before, now = baseline.ephemeral_storage, current.ephemeral_storage
        if before is None:
            reasons.append("the baseline did not record ephemeral storage: there is no value to restore")
        elif p.ephemeral_storage != before:
            reasons.append(f"ephemeral storage {p.ephemeral_storage} MB must equal the baseline {before} MB")
        elif now is not None and now > before:
            reasons.append(
                f"ephemeral storage is {now} MB, more than the baseline's {before} MB: shrinking /tmp restores "
                "no exhausted storage"
            )
    unchanged = (
        (p.timeout is None or p.timeout == current.timeout)
        and (p.memory_size is None or p.memory_size == current.memory_size)
        and (p.ephemeral_storage is None or p.ephemeral_storage == current.ephemeral_storage)
    )
    if not reasons and unchanged:
        reasons.append("timeout, memory and ephemeral storage already equal the baseline: nothing to restore")
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


def version_code_sha256(clients: AwsClients, function_name: str, version: str) -> str | None:
    """The code hash of a published version; None when the version does not exist."""
    try:
        config = clients.get("lambda").get_function_configuration(FunctionName=function_name, Qualifier=version)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return None
        raise
    return config["CodeSha256"]


def _check_alias(
    p: RollbackAliasParams,
    current: FunctionConfiguration,
    baseline: FunctionConfiguration,
    clients: AwsClients | None = None,
) -> list[str]:
    reasons = _other_function(p.function_name, current)
    if reasons:
        return reasons
    recorded = {a.name: a for a in baseline.aliases}
    base = recorded.get(p.alias_name)
    if base is None:
        known = ", ".join(sorted(recorded)) or "none"
        return [f"alias {p.alias_name} is not one of the function's aliases recorded in the baseline ({known})"]
    now = next((a for a in current.aliases if a.name == p.alias_name), None)
    if now is None:
        return [f"alias {p.alias_name} no longer exists: there is nothing to point back"]
    if p.function_version != base.function_version:
        return [
            f"version {p.function_version} is not alias {p.alias_name}'s baseline version {base.function_version}: "
            "anything else is not a restore"
        ]
    if now.function_version == base.function_version:
        return [
            f"alias {p.alias_name} already routes to its baseline version {base.function_version}: nothing to restore"
        ]
    if clients is not None:
        code = version_code_sha256(clients, p.function_name, p.function_version)
        if code is None:
            return [f"version {p.function_version} no longer exists: nothing to roll back to"]
        if code != base.code_sha256:
            return [f"version {p.function_version}'s code hash is not the one the baseline recorded"]
    return []


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


def _check_event_source(
    p: EnableEventSourceMappingParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    reasons = _other_function(p.function_name, current)
    if reasons:
        return reasons
    recorded = {m.uuid: m for m in baseline.event_source_mappings}
    if p.uuid not in recorded:
        known = ", ".join(sorted(recorded)) or "none"
        return [f"mapping {p.uuid} is not one of the function's mappings recorded in the baseline ({known})"]
    if recorded[p.uuid].state != "Enabled":
        return [f"mapping {p.uuid} was {recorded[p.uuid].state} in the baseline, not Enabled"]
    now = next((m for m in current.event_source_mappings if m.uuid == p.uuid), None)
    if now is None:
        return [f"mapping {p.uuid} no longer invokes the function"]
    if now.state in ENABLED_STATES:
        return [f"mapping {p.uuid} is already {now.state}: nothing to restore"]
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


def _check_queue(
    p: RestoreQueueAttributesParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    recorded = [m for m in baseline.event_source_mappings if m.queue_visibility_timeout is not None]
    reads = [m for m in recorded if m.event_source_arn == p.queue_arn]
    if not reads:
        known = ", ".join(sorted({m.event_source_arn for m in recorded})) or "none"
        return [f"queue {p.queue_arn} is not the source of one of the function's mappings in the baseline ({known})"]
    before = reads[0].queue_visibility_timeout
    if any(m.queue_visibility_timeout != before for m in reads):
        return [f"the baseline recorded different visibility timeouts for queue {p.queue_arn}: a person decides"]
    if p.visibility_timeout != before:
        return [
            f"visibility timeout {p.visibility_timeout} s must equal the baseline's {before} s for queue {p.queue_arn}"
        ]
    mine = {m.uuid for m in reads}
    now = [m for m in current.event_source_mappings if m.uuid in mine and m.event_source_arn == p.queue_arn]
    if not now:
        return [f"the function's mapping no longer reads queue {p.queue_arn}"]
    if before is not None and before < current.timeout:
        return [
            f"the baseline's visibility timeout ({before} s) is shorter than the function's timeout "
            f"({current.timeout} s): restoring it leaves messages redelivered while still in flight"
        ]
    if all(m.queue_visibility_timeout == before for m in now):
        return [
            f"queue {p.queue_arn}'s visibility timeout already equals the baseline ({before} s): nothing to restore"
        ]
    return []


def _identity(action: RemediationAction) -> str:
    """What an action does, ignoring the model's prose: two actions with the same identity are duplicates."""
    return _key({"type": str(action.action_type), "parameters": action.parameters})


def apply_guardrails(
    proposal: RemediationProposal,
    current: FunctionConfiguration,
    baseline: FunctionConfiguration,
    diagnosed_faults: Iterable[str],
    clients: AwsClients | None = None,
    qualifier: str | None = None,
    not_restorable: Mapping[str, str] | None = None,
) -> RemediationProposal:
    """The proposal with only surviving actions; rejected ones in ``rejected_actions`` with reasons.

    ``diagnosed_faults``: the fault types of the diagnosis the proposal answers. ``clients``: see
    :func:`check_action` (without them a rollback's version is judged by the baseline alone); so is ``qualifier``.
    """
    diagnosed = {str(f) for f in diagnosed_faults}
    kept: list[RemediationAction] = []
    rejected: list[RejectedAction] = []  # what the model put there is dropped: only this function rejects
    seen: dict[str, int] = {}
    for number, action in enumerate(proposal.actions, start=1):
        risk = RISK_FOR_ACTION.get(action.action_type, "high")
        action = action.model_copy(update={"risk_level": risk, "requires_approval": risk != "low"})
        reasons = []
        if str(action.fault_type) not in diagnosed:
            listed = ", ".join(sorted(diagnosed)) or "no faults"
            reasons.append(f"fault {action.fault_type} is not in the diagnosis ({listed})")
        identity = _identity(action)
        if identity in seen:
            reasons.append(f"duplicates action {seen[identity]}")
        else:
            reasons += check_action(action, current, baseline, clients, qualifier, not_restorable)
            seen[identity] = number
        if reasons:
            # Constructed: an action whose parameters never validated is still reported, never raised.
            rejected.append(RejectedAction.model_construct(action=action, reasons=reasons))
        else:
            kept.append(action)
    # Instances, not dumps: pydantic does not re-validate them, so a malformed action is reported as it came.
    return RemediationProposal.model_validate(
        {
            **proposal.model_dump(mode="json", exclude={"actions", "rejected_actions"}),
            "actions": kept,
            "rejected_actions": rejected,
        }
    )
