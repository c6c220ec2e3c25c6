"""Many accounts, the deterministic parts: the allow-list, how records name a member's function, which clients an
incident gets, and that the deployment's own incidents read no member list at all."""

from __future__ import annotations

import json

import pytest

from incident_responder.core import members
from incident_responder.core.members import (
    LazyMembers,
    Member,
    MemberClients,
    NotAMemberError,
    function_key_of,
    incident_clients,
    member_config,
    members_of,
    place_of,
)
from incident_responder.intake.alerts import Home
from incident_responder.lab.scenario import ScenarioError, load_scenario

HOME = Member("123456789012", "us-east-1")
A = Member("210987654321", "eu-west-1")


class FakeClients:
    """What member_access needs of the deployment's clients: an SSM client that counts its reads."""

    region = HOME.region
    session = None  # MemberClients keeps it: a default session, never used here

    def __init__(self, parameter: dict | None = None):
        self.reads = 0
        self.parameter = parameter

    def get(self, service):
        assert service == "ssm", service
        return self

    def get_parameter(self, Name):  # noqa: N803 - boto3's keyword
        self.reads += 1
        return {"Parameter": {"Value": json.dumps(self.parameter)}}


@pytest.fixture(autouse=True)
def environment(monkeypatch):
    for name in ("MEMBER_ACCOUNTS", "MEMBER_REGIONS", "MEMBER_EXTERNAL_ID", "MEMBER_ROLE_PREFIX", "MEMBERS_PARAMETER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME_ACCOUNT", HOME.account)
    monkeypatch.setenv("AWS_REGION", HOME.region)
    members._ACCESS.clear()
    yield
    members._ACCESS.clear()


def test_the_allow_list_is_every_account_in_every_region():
    assert members_of("210987654321, 310987654321", "eu-west-1,us-west-2", "us-east-1") == {
        Member("210987654321", "eu-west-1"),
        Member("210987654321", "us-west-2"),
        Member("310987654321", "eu-west-1"),
        Member("310987654321", "us-west-2"),
    }
    assert members_of("210987654321", "", "us-east-1") == {Member("210987654321", "us-east-1")}
    assert members_of("", "eu-west-1", "us-east-1") == frozenset()
    with pytest.raises(ValueError, match="ACCOUNT:REGION"):
        members_of("21098765432", "eu-west-1", "us-east-1")  # 11 digits: refused, not dropped


def test_the_deployments_own_incidents_read_no_member_list():
    clients = FakeClients({"accounts": A.account, "regions": A.region})
    for account, region in ((None, None), (HOME.account, None), (HOME.account, HOME.region)):
        assert incident_clients(account, region, "read", clients) is clients
    assert clients.reads == 0
    assert function_key_of(HOME.account, HOME.region, "orders") == "orders" and place_of(HOME.account, None) == ""


def test_a_members_incident_gets_its_clients_from_the_stacks_parameter(monkeypatch):
    monkeypatch.setenv("MEMBERS_PARAMETER", "/incident-responder/members")
    clients = FakeClients({"accounts": A.account, "regions": A.region, "external_id": "x" * 16, "role_prefix": "ir"})
    got = incident_clients(A.account, A.region, "remediate", clients)
    assert isinstance(got, MemberClients) and got.member == A and got.purpose == "remediate"
    assert got.access.role_prefix == "ir" and got.access.external_id == "x" * 16
    assert function_key_of(A.account, A.region, "orders") == f"arn:aws:lambda:{A.region}:{A.account}:function:orders"
    assert place_of(A.account, A.region) == f"account {A.account}, Region {A.region}"
    incident_clients(A.account, A.region, "read", clients)
    assert clients.reads == 1  # kept for the process, read again only after CONFIG_SECONDS
    with pytest.raises(NotAMemberError, match=f"members: {A}"):
        incident_clients("999999999999", A.region, "read", clients)
    with pytest.raises(NotAMemberError):
        incident_clients(A.account, "ap-south-1", "read", clients)


def test_without_members_another_account_is_refused_not_read_as_ours():
    with pytest.raises(NotAMemberError):
        incident_clients(A.account, A.region, "read", FakeClients({}))


def test_the_environment_wins_over_the_parameter(monkeypatch):
    monkeypatch.setenv("MEMBERS_PARAMETER", "/incident-responder/members")
    monkeypatch.setenv("MEMBER_ACCOUNTS", A.account)
    monkeypatch.setenv("MEMBER_REGIONS", A.region)
    clients = FakeClients({"accounts": "999999999999"})
    assert member_config(clients, HOME.region).members == {A} and clients.reads == 0


def test_an_alert_reads_the_list_only_when_it_is_from_elsewhere():
    loads = []
    home = Home(HOME.account, HOME.region, LazyMembers(lambda: loads.append(1) or frozenset({A})))
    assert home.answers_for(HOME.account, HOME.region) and home.answers_for(None, None) and loads == []
    assert home.answers_for(A.account, A.region) and not home.answers_for(A.account, "us-west-2")
    assert loads == [1]


@pytest.mark.parametrize(
    "workload, said",
    [
        ({"account": A.account}, "give both or neither"),
        ({"account": "999999999999", "region": "eu-west-1"}, "not a member of the lab's organisation"),
        ({"account": A.account, "region": A.region, "function": "orders-api"}, "data-processor only"),
    ],
)
def test_a_scenario_names_a_member_of_the_labs_organisation_or_is_refused(workload, said, tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text(json.dumps({"name": "x", "workload": {"function": "data-processor", **workload}}))
    with pytest.raises(ScenarioError, match=said):
        load_scenario(path)


def test_a_person_is_told_which_account_and_region_a_members_incident_is_in():
    from incident_responder.notify.chat import incident_ended
    from incident_responder.reporting.delivery import report_message

    detail = {"incident_id": "orders-1", "status": "REMEDIATED", "function_name": "orders"}
    member = {**detail, "account_id": A.account, "region": A.region}
    where = f"in account {A.account}, Region {A.region}"
    assert where in report_message(member, None, 12)[1] and "account" not in report_message(detail, None, 12)[1]
    said = json.dumps(incident_ended(member, None, "s3://bucket/report"))
    assert f"orders (account {A.account}, Region {A.region})" in said
    own = {**detail, "account_id": HOME.account, "region": HOME.region}
    assert "Region" not in json.dumps(incident_ended(own, None, "s3://bucket/report"))
