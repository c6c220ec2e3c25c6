"""PROPOSING and REVIEWING: the inline and managed policies the function's role lost since its baseline."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline
from incident_responder.account.iam_policy import statements
from incident_responder.account.state import FunctionConfiguration
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    FaultType,
    ProposedAction,
    ProposedRestoreIamPolicy,
    RestoreIamPolicyParams,
)
from incident_responder.proposal.lookups.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _key, _lookup


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
