"""restore_iam_policy: an IAM role's inline policy put back from the baseline, or a managed policy attached again.

Everything about it: its restore lookup (the remediation MCP tool), its change (capture, apply, undo), its
guardrail, where its difference shows and how verification judges it (:mod:`incident_responder.actions.base`).
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError
from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline
from incident_responder.account.iam_policy import statements
from incident_responder.account.state import FunctionConfiguration
from incident_responder.actions.base import Action, Restoration
from incident_responder.actions.change import _Change, _code
from incident_responder.actions.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _key, _lookup
from incident_responder.actions.targets import _target_reason
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    FaultType,
    ProposedAction,
    RestoreIamPolicyParams,
    proposed,
)
from incident_responder.core.encoding import canonical


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
    return _lookup(IamRestoreInfo, clients, lambda_name, _iam_restore_info, RestoreIamPolicy.sections)


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
        proposed(
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
        proposed(
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


# -- the change: capture, apply, undo ----------------------------------------------------------------


class _IamPolicy(_Change):
    def resources(self, p: RestoreIamPolicyParams) -> list[str]:
        return [f"role:{p.role_name}"]  # its policies together: a Deny in one changes what another grants

    def satisfied(self, p: RestoreIamPolicyParams, state: dict[str, Any]) -> bool:
        if p.attach_policy_arn is not None:
            return bool(state["attached"])
        return not state["absent"] and canonical(state["policy_document"]) == canonical(p.policy_document)

    def capture(self, clients: AwsClients, p: RestoreIamPolicyParams) -> dict[str, Any]:
        iam = clients.get("iam")
        if p.attach_policy_arn is not None:
            attached = [
                a["PolicyArn"]
                for page in iam.get_paginator("list_attached_role_policies").paginate(RoleName=p.role_name)
                for a in page["AttachedPolicies"]
            ]
            return {
                "role_name": p.role_name,
                "policy_arn": p.attach_policy_arn,
                "attached": p.attach_policy_arn in attached,
            }
        try:
            document = iam.get_role_policy(RoleName=p.role_name, PolicyName=p.policy_name)["PolicyDocument"]
        except ClientError as exc:
            if _code(exc) != "NoSuchEntity":
                raise
            return {"role_name": p.role_name, "policy_name": p.policy_name, "absent": True, "policy_document": None}
        return {"role_name": p.role_name, "policy_name": p.policy_name, "absent": False, "policy_document": document}

    def apply(self, clients: AwsClients, p: RestoreIamPolicyParams) -> str:
        iam = clients.get("iam")
        if p.attach_policy_arn is not None:
            iam.attach_role_policy(RoleName=p.role_name, PolicyArn=p.attach_policy_arn)
            return f"attached {p.attach_policy_arn} to role {p.role_name}"
        iam.put_role_policy(
            RoleName=p.role_name, PolicyName=p.policy_name, PolicyDocument=json.dumps(p.policy_document)
        )
        return f"put inline policy {p.policy_name} on role {p.role_name}"

    def restore(self, clients: AwsClients, p: RestoreIamPolicyParams, prior: dict[str, Any]) -> None:
        iam = clients.get("iam")
        try:
            if "attached" in prior:
                if prior["attached"]:
                    iam.attach_role_policy(RoleName=p.role_name, PolicyArn=prior["policy_arn"])
                else:
                    iam.detach_role_policy(RoleName=p.role_name, PolicyArn=prior["policy_arn"])
            elif prior["absent"]:
                iam.delete_role_policy(RoleName=p.role_name, PolicyName=prior["policy_name"])
            else:
                iam.put_role_policy(
                    RoleName=p.role_name,
                    PolicyName=prior["policy_name"],
                    PolicyDocument=json.dumps(prior["policy_document"]),
                )
        except ClientError as exc:
            if _code(exc) != "NoSuchEntity":  # already detached or deleted: that is the prior state
                raise


# -- the guardrail ----------------------------------------------------------------------------------


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


# -- the action ------------------------------------------------------------------------------------


class RestoreIamPolicy(Action):
    """An IAM role's inline policy put back from the baseline, or a managed policy attached again. High risk: a
    wrong one opens or closes what the function can reach; a person approves unless the deployment opts in."""

    action_type = ActionType.RESTORE_IAM_POLICY
    risk = "high"
    approval = "access"
    iam_writes = frozenset(
        {"iam:PutRolePolicy", "iam:DeleteRolePolicy", "iam:AttachRolePolicy", "iam:DetachRolePolicy"}
    )
    # The lookup's field that shows a fault already at the baseline (the offline critic's no-op check).
    no_drift = {
        FaultType.PERMISSION_LOSS: ("drifted", "the role's policies already match the baseline"),
    }
    lookup_tool = "get_iam_restore_info"
    sections = ("role",)
    lookup_model = IamRestoreInfo
    lookup_description = (
        "Inline policies and managed policies the role lost since the baseline, with the documents that restore them."
    )
    change = _IamPolicy()

    def lookup(self, clients, lambda_name):
        return get_iam_restore_info(clients, lambda_name)

    def guardrail(self, action, p, current, baseline, clients):
        return _target_reason(action, "the role", "role", [p.role_name]) + _check_iam(p, current, baseline)

    def drift_paths(self, p, current):
        if p.attach_policy_arn is not None:
            return ["role.attached_policy_arns"]  # a list drift compares whole: the guardrail looks at the ARN itself
        return [f"role.inline_policies.{p.policy_name}"]

    def verify(self, p, current, baseline):
        if p.attach_policy_arn is not None:
            attached = p.attach_policy_arn in current.role.attached_policy_arns
            expected = p.attach_policy_arn in baseline.role.attached_policy_arns
            what = f"managed policy {p.attach_policy_arn}"
            if attached == expected:
                return Restoration(
                    verdict=(True, f"{what} is {'attached' if attached else 'detached'} as in the baseline")
                )
            return Restoration(
                verdict=(False, f"{what} is {'attached' if attached else 'not attached'}, unlike the baseline")
            )
        return Restoration(prefixes=[f"role.inline_policies.{p.policy_name}"])
