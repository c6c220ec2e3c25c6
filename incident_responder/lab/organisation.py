"""SERVING the lab as an organisation: the central stack, and member accounts in other Regions running workloads.

moto keeps accounts apart by the credentials a request is signed with (or the ``x-moto-account-id`` header, which
the lab's own administration uses). In an organisation lab:

* each central function acts as its execution role, as Lambda gives it (credentials the lab's STS knows as that
  role's: :mod:`incident_responder.lab.moto_patches.sts`), so the member roles' trust (``aws:PrincipalArn``,
  ``sts:ExternalId``) decides what it may assume, as on AWS;
* each member account deploys member-account.yaml (its roles in the first of its Regions) and runs the sample
  data-processor workload in each of its Regions, onboarded from the central deployment's side: the baseline in the
  central table, keyed by the function's ARN;
* :func:`member_view` gives the lab's own clients for a member's account and Region, routed as the responder's are
  (:class:`incident_responder.core.members.MemberClients`): the pipeline's incident runs work unchanged on them.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

from incident_responder.core.aws import AwsClients
from incident_responder.core.members import Member, MemberClients, with_member_credentials

MEMBER_TEMPLATE = Path(__file__).parents[2] / "member-account.yaml"
MEMBER_STACK = "incident-responder-member"


@dataclass(frozen=True)
class Organisation:
    """Member accounts and Regions (each runs a sample workload) and the external id their roles require."""

    members: tuple[Member, ...]
    external_id: str = "lab-organisation-external-id"

    @property
    def parameters(self) -> dict[str, str]:
        """The central stack's parameters for these members."""
        accounts = sorted({m.account for m in self.members})
        regions = sorted({m.region for m in self.members})
        return {
            "MemberAccounts": ",".join(accounts),
            "MemberRegions": ",".join(regions),
            "MemberExternalId": self.external_id,
        }

    def roles_region(self, account: str) -> str:
        return next(m.region for m in self.members if m.account == account)


# The lab's organisation: members in two other Regions than the central stack's (us-east-1).
LAB_ORGANISATION = Organisation((Member("210987654321", "eu-west-1"), Member("310987654321", "us-west-2")))


def admin_clients(env: dict[str, str], account: str, region: str) -> AwsClients:
    """The lab's administration of ``account`` in ``region`` (moto's account header on every request)."""
    session = boto3.Session(
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=env.get("AWS_SESSION_TOKEN"),
        region_name=region,
    )
    session.events.register(
        "before-sign.*.*", lambda request, **_: request.headers.__setitem__("x-moto-account-id", account)
    )
    return AwsClients(session)


def function_credentials(role_arn: str, given: dict[str, str] | None = None) -> dict[str, str]:
    """The variables Lambda gives a function running as ``role_arn``: credentials the lab's STS knows as that role's
    (:data:`incident_responder.lab.moto_patches.sts.FUNCTION_ROLES`). ``given``: the function's credentials before a
    redeploy, kept (its running servers keep signing with them) and now naming the redeployed role."""
    from incident_responder.lab.moto_patches.sts import FUNCTION_ROLES

    key = (given or {}).get("AWS_ACCESS_KEY_ID") or "ASIA" + secrets.token_hex(8).upper()
    secret = (given or {}).get("AWS_SECRET_ACCESS_KEY") or secrets.token_urlsafe(30)
    FUNCTION_ROLES[key] = role_arn
    return {"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": f"lab-{key}"}


def deploy_member(
    admin: AwsClients, organisation: Organisation, member: Member, central: Member, central_stack: str
) -> dict[str, Any]:
    """member-account.yaml in ``member``'s account and Region, trusting ``central_stack``'s function roles."""
    cfn = admin.get("cloudformation")
    cfn.create_stack(
        StackName=MEMBER_STACK,
        TemplateBody=MEMBER_TEMPLATE.read_text(),
        Parameters=[
            {"ParameterKey": k, "ParameterValue": v}
            for k, v in {
                "CentralAccountId": central.account,
                "CentralRegion": central.region,
                "CentralStackName": central_stack,
                "CentralEventBusName": f"{central_stack}-alarms",
                "ExternalId": organisation.external_id,
                "RolesRegion": organisation.roles_region(member.account),
            }.items()
        ],
        Capabilities=["CAPABILITY_NAMED_IAM"],
    )
    stack = cfn.describe_stacks(StackName=MEMBER_STACK)["Stacks"][0]
    if stack["StackStatus"] != "CREATE_COMPLETE":
        raise RuntimeError(f"member stack in {member}: {stack['StackStatus']} {stack.get('StackStatusReason', '')}")
    return stack


def member_view(home_clients: AwsClients, admin: AwsClients, member: Member) -> MemberClients:
    """The lab's clients in a member account and Region, routed as the responder's are: the responder's tables,
    bucket, topics and executions central (the sample workload's bucket with them), the rest in the member."""
    return with_member_credentials(home_clients, admin, member)


def member_profile(env: dict[str, str], member: Member, profile: str, credentials: Path) -> Path:
    """An AWS profile of ``member``'s account, as an operator of it holds one (an IAM user's access key there, which
    moto answers for that account), written to ``credentials`` (for AWS_SHARED_CREDENTIALS_FILE)."""
    iam = admin_clients(env, member.account, member.region).get("iam")
    user = f"operator-{profile}"[:64]
    iam.create_user(UserName=user)
    key = iam.create_access_key(UserName=user)["AccessKey"]
    with credentials.open("a") as out:
        out.write(
            f"[{profile}]\naws_access_key_id = {key['AccessKeyId']}\naws_secret_access_key = {key['SecretAccessKey']}\n"
        )
    return credentials
