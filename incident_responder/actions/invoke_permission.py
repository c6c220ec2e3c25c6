"""restore_invoke_permission: a statement of the function's resource-based policy the baseline recorded, put back
with AddPermission (catalogue entry resource-policy-missing: another service or account can no longer invoke it).

Everything about it: its restore lookup (the remediation MCP tool), its change (capture, apply, undo), its
guardrail, where its difference shows and how verification judges it (:mod:`incident_responder.actions.base`).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline
from incident_responder.account.state import FunctionConfiguration, InvokePermission, permission_key
from incident_responder.account.vetting import open_permission
from incident_responder.actions.base import Action, Restoration
from incident_responder.actions.change import _Change
from incident_responder.actions.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _lookup
from incident_responder.actions.targets import _other_function, _target_reason
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import ActionType, FaultType, ProposedAction, proposed
from incident_responder.core.contracts.parameters import RestoreInvokePermissionParams


class InvokePermissionRestoreInfo(BaseModel):
    function_name: str
    missing: list[InvokePermission] = Field(
        default_factory=list, description="statements the baseline recorded that the function's policy lacks now"
    )
    baseline_captured_at: str | None = None
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def get_invoke_permission_restore_info(clients: AwsClients, lambda_name: str) -> InvokePermissionRestoreInfo:
    return _lookup(InvokePermissionRestoreInfo, clients, lambda_name, _restore_info, RestoreInvokePermission.sections)


def params_for(function_name: str, permission: InvokePermission) -> RestoreInvokePermissionParams:
    return RestoreInvokePermissionParams(
        function_name=function_name,
        qualifier=permission.qualifier,
        statement_id=permission.statement_id,
        action=permission.action,
        principal=permission.principal,
        source_arn=permission.source_arn,
        source_account=permission.source_account,
        principal_org_id=permission.principal_org_id,
    )


def _restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> InvokePermissionRestoreInfo:
    now = {permission_key(p): p for p in current.invoke_permissions}
    missing = [p for p in baseline.configuration.invoke_permissions if permission_key(p) not in now]
    actions, refused = [], []
    for permission in missing:
        if permission.other_conditions:
            refused.append(
                f"statement {permission.statement_id}: its conditions go beyond what AddPermission can state: a person "
                "restores it"
            )
            continue
        target = baseline.function_arn or name
        if permission.qualifier and target.startswith("arn:"):
            target = f"{target}:{permission.qualifier}"
        actions.append(
            proposed(
                fault_type=FaultType.INVOKE_PERMISSION_LOST,
                action_type=ActionType.RESTORE_INVOKE_PERMISSION,
                target_resource=target,
                parameters=params_for(name, permission),
                reasoning=f"statement {permission.statement_id} ({permission.principal}) missing from the policy",
            )
        )
    return InvokePermissionRestoreInfo(
        function_name=name,
        missing=missing,
        baseline_captured_at=baseline.captured_at,
        actions=actions,
        not_restorable=refused,
    )


# -- the change: capture, apply, undo ----------------------------------------------------------------


def _statement(clients: AwsClients, p: RestoreInvokePermissionParams) -> dict[str, Any] | None:
    lam = clients.get("lambda")
    qualifier = {"Qualifier": p.qualifier} if p.qualifier else {}
    try:
        policy = lam.get_policy(FunctionName=p.function_name, **qualifier)
    except lam.exceptions.ResourceNotFoundException:
        return None
    for statement in json.loads(policy.get("Policy") or "{}").get("Statement", []):
        resource = str(statement.get("Resource", "")).split(":")
        if statement.get("Sid") == p.statement_id and (resource[7] if len(resource) > 7 else None) == p.qualifier:
            return statement
    return None


class _InvokePermission(_Change):
    def resources(self, p: RestoreInvokePermissionParams) -> list[str]:
        return [f"function-policy:{p.function_name}"]

    def satisfied(self, p: RestoreInvokePermissionParams, state: dict[str, Any]) -> bool:
        return state["statement"] is not None

    def capture(self, clients: AwsClients, p: RestoreInvokePermissionParams) -> dict[str, Any]:
        return {"function_name": p.function_name, "qualifier": p.qualifier, "statement": _statement(clients, p)}

    def apply(self, clients: AwsClients, p: RestoreInvokePermissionParams) -> str:
        optional = {
            "Qualifier": p.qualifier,
            "SourceArn": p.source_arn,
            "SourceAccount": p.source_account,
            "PrincipalOrgID": p.principal_org_id,
        }
        clients.get("lambda").add_permission(
            FunctionName=p.function_name,
            StatementId=p.statement_id,
            Action=p.action,
            Principal=p.principal,
            **{k: v for k, v in optional.items() if v is not None},
        )
        on = f"{p.function_name}:{p.qualifier}" if p.qualifier else p.function_name
        return f"granted {p.principal} {p.action} on {on} again (statement {p.statement_id})"

    def restore(self, clients: AwsClients, p: RestoreInvokePermissionParams, prior: dict[str, Any]) -> None:
        if prior["statement"] is not None:
            return  # it was there: the apply changed nothing
        lam = clients.get("lambda")
        with contextlib.suppress(lam.exceptions.ResourceNotFoundException):  # already gone
            lam.remove_permission(
                FunctionName=p.function_name,
                StatementId=p.statement_id,
                **({"Qualifier": p.qualifier} if p.qualifier else {}),
            )


# -- the guardrail ----------------------------------------------------------------------------------


def _check_permission(
    p: RestoreInvokePermissionParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    reasons = _other_function(p.function_name, current)
    key = permission_key(InvokePermission(statement_id=p.statement_id, qualifier=p.qualifier, principal=p.principal))
    recorded = next((b for b in baseline.invoke_permissions if permission_key(b) == key), None)
    if recorded is None:
        reasons.append(f"the baseline recorded no statement {key} in the function's policy: nothing to restore")
    elif params_for(p.function_name, recorded) != p:
        reasons.append(f"statement {key} must equal the baseline's (principal, action, conditions)")
    elif recorded.other_conditions:
        reasons.append(f"statement {key} had conditions AddPermission cannot state: a person restores it")
    if any(permission_key(c) == key for c in current.invoke_permissions):
        reasons.append(f"statement {key} is in the function's policy already: nothing to restore")
    if p.qualifier and p.qualifier not in {a.name for a in current.aliases} and not p.qualifier.isdigit():
        reasons.append(f"alias {p.qualifier} does not exist: restore the alias first")
    return reasons


# -- the action ------------------------------------------------------------------------------------


class RestoreInvokePermission(Action):
    """A statement of the function's resource-based policy put back as the baseline recorded it. Medium risk: it
    decides who may invoke the function (approved as access); one open to any principal without a condition is
    never restored."""

    action_type = ActionType.RESTORE_INVOKE_PERMISSION
    risk = "medium"
    approval = "access"
    iam_writes = frozenset({"lambda:AddPermission", "lambda:RemovePermission"})
    no_drift = {
        FaultType.INVOKE_PERMISSION_LOST: ("missing", "no recorded statement is missing from the function's policy"),
    }
    lookup_tool = "get_invoke_permission_restore_info"
    sections = ("aliases", "invoke_permissions")
    lookup_model = InvokePermissionRestoreInfo
    lookup_description = (
        "The statements of the function's resource-based policy (who may invoke it) the baseline recorded and the "
        "policy lacks now, and the restores that put them back."
    )
    change = _InvokePermission()

    def lookup(self, clients, lambda_name):
        return get_invoke_permission_restore_info(clients, lambda_name)

    def guardrail(self, action, p, current, baseline, clients):
        reasons = _target_reason(action, "the function", "function", [p.function_name]) + _check_permission(
            p, current, baseline
        )
        if open_permission(p.principal, p.source_arn, p.source_account, p.principal_org_id):
            reasons.append("a statement open to any principal (*) without a condition: never granted by the responder")
        return reasons

    def drift_paths(self, p, current):
        key = permission_key(InvokePermission(statement_id=p.statement_id, qualifier=p.qualifier, principal=""))
        return [f"invoke_permissions.{key}"]

    def verify(self, p, current, baseline):
        return Restoration(prefixes=self.drift_paths(p, current))
