"""Many accounts in the lab: member-account.yaml deployed into two member accounts (moto keeps each account's state
apart by the credentials AssumeRole returns, and the lab's STS honours trust policies), and the central side's
MemberAccess assuming into them, tried as an attacker would."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest

from incident_responder.core.aws import AwsClients
from incident_responder.core.members import (
    Member,
    MemberAccess,
    MemberAccessError,
    NotAMemberError,
    parse_members,
)

REPO = Path(__file__).resolve().parents[2]
CENTRAL, MEMBER_A, MEMBER_B = "123456789012", "222222222222", "333333333333"
EXTERNAL_ID = "lab-external-id-0123456789"
ROLES_REGION = "eu-west-1"


def _client(lab, service: str, account: str, region: str = ROLES_REGION):
    """A client acting as ``account``'s administrator (the lab's header for it: only the test's setup uses it)."""
    client = boto3.client(
        service,
        endpoint_url=lab.env["AWS_ENDPOINT_URL"],
        region_name=region,
        aws_access_key_id=lab.env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=lab.env["AWS_SECRET_ACCESS_KEY"],
    )
    client.meta.events.register(
        "before-sign.*.*", lambda request, **_: request.headers.__setitem__("x-moto-account-id", account)
    )
    return client


def _deploy_member(lab, account: str, region: str, external_id: str = EXTERNAL_ID) -> dict:
    cfn = _client(lab, "cloudformation", account, region)
    parameters = {
        "CentralAccountId": CENTRAL,
        "CentralRegion": "us-east-1",
        "RolesRegion": ROLES_REGION,
        "ExternalId": external_id,
    }
    cfn.create_stack(
        StackName="incident-responder-member",
        TemplateBody=(REPO / "member-account.yaml").read_text(),
        Capabilities=["CAPABILITY_NAMED_IAM"],
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
    )
    return cfn.describe_stacks(StackName="incident-responder-member")["Stacks"][0]


def _function_clients(lab, function: str) -> AwsClients:
    """Clients acting as the central stack's ``function`` role (as its Lambda would, with its execution role)."""
    iam = _client(lab, "iam", CENTRAL)
    name = f"incident-responder-{function}Role-LAB{len(function)}"
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{CENTRAL}:root"}, "Action": "sts:AssumeRole"}],
    }  # fmt: skip
    try:
        arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    except iam.exceptions.EntityAlreadyExistsException:
        arn = iam.get_role(RoleName=name)["Role"]["Arn"]
    credentials = _client(lab, "sts", CENTRAL).assume_role(RoleArn=arn, RoleSessionName=function)["Credentials"]
    session = boto3.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        region_name="us-east-1",
    )
    return AwsClients(session)


@pytest.fixture(scope="module")
def organisation(lab):
    """Two member accounts with the member template (A in two Regions), the second with another external id."""
    lab.reset()
    endpoint = pytest.MonkeyPatch()
    endpoint.setenv("AWS_ENDPOINT_URL", lab.env["AWS_ENDPOINT_URL"])  # what an assumed session reaches: the lab
    stacks = [
        _deploy_member(lab, MEMBER_A, ROLES_REGION),
        _deploy_member(lab, MEMBER_A, "us-east-1"),  # a second Region of A: its alarm rule, not the roles again
        _deploy_member(lab, MEMBER_B, ROLES_REGION, external_id="another-external-id-9876"),
    ]
    assert [s["StackStatus"] for s in stacks] == ["CREATE_COMPLETE"] * 3
    yield lab
    endpoint.undo()


def _access(lab, function: str, **kwargs) -> MemberAccess:
    members = {Member(MEMBER_A, ROLES_REGION), Member(MEMBER_A, "us-east-1"), Member(MEMBER_B, ROLES_REGION)}
    return MemberAccess(
        home_clients=_function_clients(lab, function),
        home=Member(CENTRAL, "us-east-1"),
        members=frozenset(members),
        external_id=kwargs.pop("external_id", EXTERNAL_ID),
        **kwargs,
    )


def test_a_central_reader_reads_a_member_account_through_its_read_role(organisation):
    access = _access(organisation, "DiagnosticsMcpFunction")
    clients = access.clients(MEMBER_A, ROLES_REGION)
    identity = clients.get("sts").get_caller_identity()
    assert identity["Account"] == MEMBER_A and ":assumed-role/incident-responder-read/" in identity["Arn"]
    assert clients.region == ROLES_REGION
    # What it reads is the member account's: its roles, not the central account's.
    names = {r["RoleName"] for r in clients.get("iam").list_roles()["Roles"]}
    assert {"incident-responder-read", "incident-responder-remediate"} <= names
    assert not any(n.endswith("RoleLAB22") for n in names)
    # Kept for the invocation; the same pair and purpose is not assumed again.
    assert access.clients(MEMBER_A, ROLES_REGION) is clients
    # The member's other Region: the same (global) role, the Region's own clients.
    assert access.clients(MEMBER_A, "us-east-1").region == "us-east-1"


def test_the_roles_are_created_once_per_account_whatever_the_regions(organisation):
    iam = _client(organisation, "iam", MEMBER_A)
    names = [r["RoleName"] for r in iam.list_roles()["Roles"] if r["RoleName"].startswith("incident-responder-")]
    assert sorted(n for n in names if not n.startswith("incident-responder-member")) == [
        "incident-responder-read",
        "incident-responder-remediate",
    ]


def test_the_remediate_function_alone_may_assume_the_remediation_role(organisation):
    clients = _access(organisation, "RemediateFunction").clients(MEMBER_A, ROLES_REGION, "remediate")
    arn = clients.get("sts").get_caller_identity()["Arn"]
    assert ":assumed-role/incident-responder-remediate/" in arn
    for reader in ("DiagnosticsMcpFunction", "ProposeFunction"):
        with pytest.raises(MemberAccessError, match="AccessDenied"):
            _access(organisation, reader).clients(MEMBER_A, ROLES_REGION, "remediate")


def test_a_function_the_trust_does_not_name_is_refused(organisation):
    with pytest.raises(MemberAccessError, match="is not authorized to perform: sts:AssumeRole"):
        _access(organisation, "ReportFunction").clients(MEMBER_A, ROLES_REGION)


def test_a_missing_or_wrong_external_id_is_refused(organisation):
    with pytest.raises(MemberAccessError, match="AccessDenied"):
        _access(organisation, "DiagnosticsMcpFunction", external_id="wrong-external-id-000000").clients(
            MEMBER_A, ROLES_REGION
        )
    # B's external id is not A's: the id of one member never opens another.
    with pytest.raises(MemberAccessError, match="AccessDenied"):
        _access(organisation, "DiagnosticsMcpFunction").clients(MEMBER_B, ROLES_REGION)
    with pytest.raises(MemberAccessError, match="no external id"):
        _access(organisation, "DiagnosticsMcpFunction", external_id=None).clients(MEMBER_A, ROLES_REGION)


def test_an_account_or_region_off_the_allow_list_is_refused_before_anything_is_assumed(organisation):
    access = _access(organisation, "DiagnosticsMcpFunction")

    class _NoSts:
        def assume_role(self, **_):  # pragma: no cover - must never be called
            raise AssertionError("assumed a role for an account off the allow-list")

    access.home_clients._clients["sts"] = _NoSts()
    for account, region in ((MEMBER_B, "us-east-1"), ("444444444444", ROLES_REGION)):
        with pytest.raises(NotAMemberError, match=f"account {account}, Region {region} is not a member"):
            access.clients(account, region)
    # The deployment's own account and Region need no role: its own clients.
    assert access.clients(CENTRAL, "us-east-1") is access.home_clients


def test_a_role_that_answers_for_another_account_is_refused(organisation):
    # A's role name with B's account answering (a misconfigured or hostile member): never used as A's.
    access = _access(organisation, "DiagnosticsMcpFunction")
    real = access.home_clients.get("sts")

    class _Swapped:
        def assume_role(self, **kwargs):
            answer = real.assume_role(**kwargs)
            arn = answer["AssumedRoleUser"]["Arn"]
            answer["AssumedRoleUser"]["Arn"] = arn.replace(MEMBER_A, MEMBER_B)
            return answer

    access.home_clients._clients["sts"] = _Swapped()
    with pytest.raises(MemberAccessError, match=f"not as account {MEMBER_A}"):
        access.clients(MEMBER_A, ROLES_REGION)


def test_the_allow_list_parses_strictly():
    members = parse_members(f" {MEMBER_A}:eu-west-1,{MEMBER_B}:us-east-1 ,")
    assert members == {Member(MEMBER_A, "eu-west-1"), Member(MEMBER_B, "us-east-1")}
    assert parse_members(",".join(str(m) for m in members)) == members and parse_members("") == frozenset()
    for bad in ("22222222222:eu-west-1", f"{MEMBER_A}", f"{MEMBER_A}:Europe", f"{MEMBER_A}:eu-west-1:x"):
        with pytest.raises(ValueError, match="expected ACCOUNT:REGION"):
            parse_members(bad)
