"""What a baseline may never bring back: a restore is only as safe as the value it restores.

A baseline records the function as it was when onboarded (or refreshed), and nobody promises that was
healthy: a role with an ``Action: *`` statement, reserved concurrency 0 or a one-second timeout recorded
then would otherwise come back as a "restore". :func:`vet` names each such value with the reason, when the
baseline is recorded (``responder onboard`` prints them) and again whenever it is loaded, so a baseline item
written by hand is judged the same. :func:`refusals` judges an action by its own parameters, whatever a
baseline holds: the guardrails refuse it when it would grant a wildcard or administrator access, set
concurrency to 0 or go below the floors, and when it restores a value the baseline marked not restorable.
"""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any

from pydantic import BaseModel

from incident_responder.account.iam_policy import statements
from incident_responder.account.state import FunctionConfiguration, permission_key
from incident_responder.core.contracts import (
    ActionType,
    RemediationAction,
    RestoreIamPolicyParams,
    RestoreInvokePermissionParams,
    UpdateConcurrencyParams,
    UpdateFunctionConfigurationParams,
)
from incident_responder.core.contracts.parameters import (
    RestoreDeadLetterConfigParams,
    RestoreEventInvokeConfigParams,
)

# Lambda's default timeout and its smallest memory: a restore never goes below them.
TIMEOUT_FLOOR_SECONDS = 3
MEMORY_FLOOR_MB = 128
# AWS managed policies that make a role an administrator of the account (or of its IAM).
ADMINISTRATOR_POLICIES = ("AdministratorAccess", "PowerUserAccess", "IAMFullAccess")
# Actions that let a role grant itself (or another principal) more than it has.
ESCALATION_ACTIONS = (
    "iam:PutRolePolicy",
    "iam:AttachRolePolicy",
    "iam:PutUserPolicy",
    "iam:AttachUserPolicy",
    "iam:PutGroupPolicy",
    "iam:AttachGroupPolicy",
    "iam:CreatePolicyVersion",
    "iam:SetDefaultPolicyVersion",
    "iam:UpdateAssumeRolePolicy",
    "iam:CreateAccessKey",
    "iam:CreateLoginProfile",
    "iam:UpdateLoginProfile",
    "iam:AddUserToGroup",
    "iam:PassRole",
)


class NotRestorable(BaseModel):
    path: str  # as drift names it: role.inline_policies.<name>, role.attached_policy_arns.<arn>, timeout, ...
    reason: str


def _listed(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def broad_grants(document: Any) -> list[str]:
    """Why a policy document grants wildcard or administrator access (empty when it does not)."""
    if not isinstance(document, dict):
        return ["the policy document is not an object"]
    found = []
    for statement in statements(document):
        if not isinstance(statement, dict) or statement.get("Effect") != "Allow":
            continue
        actions = [a.lower() for a in _listed(statement.get("Action"))]
        resources = _listed(statement.get("Resource"))
        every_resource = "*" in resources or "NotResource" in statement
        if "NotAction" in statement:
            found.append("an Allow with NotAction grants every action it does not name")
        if any(a == "*" or a.split(":", 1)[0] == "*" for a in actions):
            found.append("an Allow of Action * grants every action of every service")
            continue
        escalations = sorted({e for e in ESCALATION_ACTIONS for a in actions if fnmatchcase(e.lower(), a)})
        if escalations:
            found.append(f"an Allow of {', '.join(escalations)} lets the role grant itself more")
        services = sorted({a.split(":", 1)[0] for a in actions if a.endswith(":*") and not a.startswith("*")})
        if services and every_resource:
            found.append(f"an Allow of {', '.join(s + ':*' for s in services)} on every resource")
    return list(dict.fromkeys(found))


def administrator_policy(policy_arn: str) -> bool:
    """An AWS managed policy that administers the account (``arn:<partition>:iam::aws:policy/...``)."""
    parts = policy_arn.split(":")
    return len(parts) >= 6 and parts[4] == "aws" and parts[5].rsplit("/", 1)[-1] in ADMINISTRATOR_POLICIES


def open_permission(
    principal: str, source_arn: str | None, source_account: str | None, principal_org_id: str | None
) -> bool:
    """A resource-based policy statement that lets anyone invoke the function: principal * without a condition."""
    return principal.strip() == "*" and not (source_arn or source_account or principal_org_id)


def vet(
    configuration: FunctionConfiguration, managed_documents: Mapping[str, Any] | None = None
) -> list[NotRestorable]:
    """Every value of ``configuration`` a restore must never bring back, with why.

    ``managed_documents``: the default version's document of each attached customer managed policy, where the
    caller could read it (onboarding does; the remediate role cannot)."""
    out = []
    for name, document in sorted(configuration.role.inline_policies.items()):
        for reason in broad_grants(document):
            out.append(NotRestorable(path=f"role.inline_policies.{name}", reason=reason))
    documents = managed_documents or {}
    for arn in sorted(configuration.role.attached_policy_arns):
        path = f"role.attached_policy_arns.{arn}"
        if administrator_policy(arn):
            out.append(NotRestorable(path=path, reason="an administrator policy"))
        if arn in documents:
            out += [NotRestorable(path=path, reason=reason) for reason in broad_grants(documents[arn])]
    for permission in configuration.invoke_permissions:
        if (
            open_permission(
                permission.principal, permission.source_arn, permission.source_account, permission.principal_org_id
            )
            and not permission.other_conditions
        ):
            out.append(
                NotRestorable(
                    path=f"invoke_permissions.{permission_key(permission)}",
                    reason="a statement open to any principal (*) without a condition lets anyone invoke the function",
                )
            )
    if configuration.reserved_concurrency == 0:
        out.append(NotRestorable(path="reserved_concurrency", reason="reserved concurrency 0 stops every invocation"))
    if configuration.timeout < TIMEOUT_FLOOR_SECONDS:
        out.append(
            NotRestorable(
                path="timeout", reason=f"a timeout of {configuration.timeout} s is below {TIMEOUT_FLOOR_SECONDS} s"
            )
        )
    if configuration.memory_size < MEMORY_FLOOR_MB:
        out.append(
            NotRestorable(
                path="memory_size", reason=f"{configuration.memory_size} MB of memory is below {MEMORY_FLOOR_MB} MB"
            )
        )
    # Where failed events (their payloads) go: never restored to a queue or topic of another account.
    account = configuration.role.role_arn.split(":")[4] if configuration.role.role_arn.count(":") >= 5 else None
    for path in ("dead_letter_target", "async_on_failure"):
        target = getattr(configuration, path)
        if target and account and target.count(":") >= 5 and target.split(":")[4] != account:
            reason = f"{target} is outside the function's account {account}: its failed events would leave it"
            out.append(NotRestorable(path=path, reason=reason))
    return out


def _parameters(action: Any) -> BaseModel | None:
    """An action's typed parameters (a proposed action holds them typed already); None when malformed."""
    if isinstance(action.parameters, BaseModel):
        return action.parameters
    try:
        return action.typed_parameters()
    except Exception:  # noqa: BLE001 - malformed parameters are the guardrails' to report
        return None


def _paths(p: BaseModel | None) -> list[str]:
    """The baseline paths an action with these parameters restores (as :func:`vet` names them)."""
    if isinstance(p, RestoreIamPolicyParams):
        if p.attach_policy_arn is not None:
            return [f"role.attached_policy_arns.{p.attach_policy_arn}"]
        return [f"role.inline_policies.{p.policy_name}"]
    if isinstance(p, UpdateConcurrencyParams):
        return ["reserved_concurrency"]
    if isinstance(p, RestoreInvokePermissionParams):
        return [
            f"invoke_permissions.{p.qualifier}:{p.statement_id}"
            if p.qualifier
            else f"invoke_permissions.{p.statement_id}"
        ]
    if isinstance(p, RestoreDeadLetterConfigParams):
        return ["dead_letter_target"]
    if isinstance(p, RestoreEventInvokeConfigParams):
        return ["async_on_failure"] if p.on_failure_destination else []
    if isinstance(p, UpdateFunctionConfigurationParams):
        return [path for path, value in (("timeout", p.timeout), ("memory_size", p.memory_size)) if value is not None]
    return []


def refusals(action: RemediationAction, not_restorable: Mapping[str, str] | None = None) -> list[str]:
    """Reasons the action may never be applied, whatever the baseline says; empty when none."""
    p = _parameters(action)
    reasons = [
        f"the baseline's {path} is not restorable ({why}): a person restores it"
        for path in _paths(p)
        if (why := (not_restorable or {}).get(path))
    ]
    if action.action_type == ActionType.RESTORE_IAM_POLICY and isinstance(p, RestoreIamPolicyParams):
        if p.attach_policy_arn is not None and administrator_policy(p.attach_policy_arn):
            reasons.append(f"{p.attach_policy_arn} is an administrator policy: never attached by the responder")
        if p.policy_document is not None:
            reasons += [
                f"the policy document: {why}: never granted by the responder" for why in broad_grants(p.policy_document)
            ]
    if isinstance(p, RestoreInvokePermissionParams) and open_permission(
        p.principal, p.source_arn, p.source_account, p.principal_org_id
    ):
        reasons.append("a statement open to any principal (*) without a condition: never granted by the responder")
    if isinstance(p, UpdateConcurrencyParams) and p.reserved_concurrent_executions == 0:
        reasons.append("reserved concurrency 0 stops every invocation: never set by the responder")
    if isinstance(p, UpdateFunctionConfigurationParams):
        if p.timeout is not None and p.timeout < TIMEOUT_FLOOR_SECONDS:
            reasons.append(f"a timeout of {p.timeout} s is below the floor of {TIMEOUT_FLOOR_SECONDS} s")
        if p.memory_size is not None and p.memory_size < MEMORY_FLOOR_MB:
            reasons.append(f"{p.memory_size} MB of memory is below the floor of {MEMORY_FLOOR_MB} MB")
    return list(dict.fromkeys(reasons))
