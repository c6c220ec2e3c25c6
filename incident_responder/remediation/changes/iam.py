"""REMEDIATING and ROLLING_BACK: an IAM role's inline policy put back, or a managed policy attached again."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import RestoreIamPolicyParams
from incident_responder.core.encoding import canonical
from incident_responder.remediation.changes.base import _Change, _code


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
