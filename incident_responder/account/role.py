"""Every stage: a function's execution role as read (its attached and inline policies) and its policy documents."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from pydantic import BaseModel, Field

from incident_responder.account.names import role_name_of
from incident_responder.core.aws import AwsClients


class RoleState(BaseModel):
    role_name: str
    role_arn: str
    attached_policy_arns: list[str] = Field(default_factory=list)
    inline_policies: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="inline policy name -> full policy document"
    )


def read_role(clients: AwsClients, role_arn: str) -> RoleState:
    iam = clients.get("iam")
    name = role_name_of(role_arn)
    attached: list[str] = []
    for page in iam.get_paginator("list_attached_role_policies").paginate(RoleName=name):
        attached.extend(p["PolicyArn"] for p in page["AttachedPolicies"])
    inline: dict[str, dict[str, Any]] = {}
    for page in iam.get_paginator("list_role_policies").paginate(RoleName=name):
        for policy_name in page["PolicyNames"]:
            doc = iam.get_role_policy(RoleName=name, PolicyName=policy_name)["PolicyDocument"]
            inline[policy_name] = doc  # boto3 already URL-decodes and parses the document
    return RoleState(role_name=name, role_arn=role_arn, attached_policy_arns=sorted(attached), inline_policies=inline)


def managed_policy_documents(
    clients: AwsClients, policy_arns: list[str], *, skip_unreadable: bool = False
) -> dict[str, dict[str, Any]]:
    """Default-version documents of attached managed policies, by ARN (``skip_unreadable``: a policy that cannot
    be read is left out instead of raising)."""
    from botocore.exceptions import BotoCoreError, ClientError

    iam = clients.get("iam")
    docs = {}
    for arn in policy_arns:
        try:
            version = iam.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"]
            document = iam.get_policy_version(PolicyArn=arn, VersionId=version)["PolicyVersion"]["Document"]
        except (ClientError, BotoCoreError):
            if skip_unreadable:
                continue
            raise
        docs[arn] = json.loads(unquote(document)) if isinstance(document, str) else document
    return docs


def role_policy_documents(clients: AwsClients, role: RoleState) -> list[dict[str, Any]]:
    """The role's inline documents and the attached managed ones that can be read."""
    return [
        *role.inline_policies.values(),
        *managed_policy_documents(clients, role.attached_policy_arns, skip_unreadable=True).values(),
    ]
