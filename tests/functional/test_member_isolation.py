"""Many accounts, tried as an attacker would: nothing of one account reaches another's incident.

The lab holds the central account (123456789012, us-east-1) and two members in eu-west-1, each with a function
named data-processor; the central one and member A's are onboarded, member B's is not. The deployment answers for
both members (MEMBER_ACCOUNTS, MEMBER_REGIONS, as the stack's unversioned functions hold them).
"""

from __future__ import annotations

import json

import anyio
import pytest

from incident_responder.account.baseline import record_baseline
from incident_responder.account.errors import OutOfScopeError
from incident_responder.account.scope import OnboardedScope
from incident_responder.agent.executor import ToolExecutor
from incident_responder.agent.tools import ToolSpec
from incident_responder.core.members import Member, NotAMemberError, function_key, incident_clients, member_of
from incident_responder.intake.ingest import admission, decide, group_key
from incident_responder.lab.account.data_processor import create_sample_account
from incident_responder.lab.account.resources import create_table
from incident_responder.lab.organisation import admin_clients, member_profile, member_view
from incident_responder.memory.history import read_history
from incident_responder.memory.record import remember
from tests.conftest import STATE_TABLE

CENTRAL = Member("123456789012", "us-east-1")
A = Member("210987654321", "eu-west-1")
B = Member("310987654321", "eu-west-1")
STATE_MACHINE = f"arn:aws:states:{CENTRAL.region}:{CENTRAL.account}:stateMachine:incident-lifecycle"


def arn(member: Member, name: str = "data-processor") -> str:
    return f"arn:aws:lambda:{member.region}:{member.account}:function:{name}"


@pytest.fixture
def organisation(clients, sample, lab, monkeypatch):
    """Members A and B, each with a data-processor; A's onboarded from the central side, B's not."""
    monkeypatch.setenv("HOME_ACCOUNT", CENTRAL.account)
    monkeypatch.setenv("MEMBER_ACCOUNTS", f"{A.account},{B.account}")
    monkeypatch.setenv("MEMBER_REGIONS", A.region)
    monkeypatch.setenv("MEMBER_EXTERNAL_ID", "lab-organisation-external-id")
    views = {}
    for member in (A, B):
        views[member] = member_view(clients, admin_clients(lab.env, member.account, member.region), member)
        create_sample_account(views[member], responder_resources=False)
    record_baseline(views[A], "data-processor")
    return views


def alarm(member: Member, function: str = "data-processor") -> str:
    return json.dumps(
        {
            "AlarmName": f"{function}-errors",
            "AWSAccountId": member.account,
            "NewStateValue": "ALARM",
            "NewStateReason": "Threshold Crossed",
            "StateChangeTime": "2026-11-28T02:00:00.000+0000",
            "AlarmArn": f"arn:aws:cloudwatch:{member.region}:{member.account}:alarm:{function}-errors",
            "OldStateValue": "OK",
            "Trigger": {
                "MetricName": "Errors",
                "Namespace": "AWS/Lambda",
                "Dimensions": [{"name": "FunctionName", "value": function}],
            },
        }
    )


def admit(clients, message: str, table: str):
    home, clients_for = admission(clients, STATE_MACHINE)
    return decide(clients, message, table, home, clients_for)


def test_a_member_alarm_starts_its_own_accounts_incident_and_no_other(clients, sample, organisation):
    incident, refused = admit(clients, alarm(A), sample.baseline_table)
    assert refused is None and (incident.account_id, incident.region) == (A.account, A.region)
    # Member B's function of the same name was never onboarded: onboarded in A and in the central account is not B.
    incident, refused = admit(clients, alarm(B), sample.baseline_table)
    assert incident is None and refused.outcome == "rejected" and "not onboarded" in refused.reason


def test_an_alarm_of_an_account_or_region_off_the_list_is_refused_with_the_members_named(clients, sample, organisation):
    for stranger in (Member("999999999999", A.region), Member(A.account, "ap-south-1")):
        incident, refused = admit(clients, alarm(stranger), sample.baseline_table)
        assert incident is None and refused.outcome == "rejected"
        assert f"{A.account}:{A.region}" in refused.reason and "MemberAccounts" in refused.reason


def test_the_same_fault_in_two_accounts_is_two_incidents(clients, sample, organisation):
    central, _ = admit(clients, alarm(CENTRAL), sample.baseline_table)
    member, _ = admit(clients, alarm(A), sample.baseline_table)
    assert central.function_name == member.function_name == "data-processor"
    assert group_key(central) != group_key(member)
    assert arn(A) in group_key(member) and arn(A) not in group_key(central)


def test_the_tools_resolve_an_arn_to_its_own_account_and_refuse_the_rest(clients, sample, organisation):
    scope = OnboardedScope(clients, sample.baseline_table)
    home_clients, name = scope.resolve("data-processor")
    assert home_clients is clients and name == "data-processor"
    member_clients, name = scope.resolve(arn(A))
    assert member_of(member_clients) == A and name == "data-processor"
    with pytest.raises(OutOfScopeError, match="not onboarded"):
        scope.resolve(arn(B))  # B's function of the same name: another function, never onboarded
    with pytest.raises(OutOfScopeError, match="not a member"):
        scope.resolve(arn(Member("999999999999", A.region)))
    with pytest.raises(NotAMemberError):
        incident_clients("999999999999", A.region)


def test_a_members_history_is_its_own(clients, sample, organisation):
    from incident_responder.core.contracts.history import PastIncident

    create_table(clients, "IncidentStateTable", STATE_TABLE)
    entry = PastIncident.model_validate(
        {
            "incident_id": "inc-member-a",
            "started_at": "2026-11-28T01:50:00Z",
            "ended_at": "2026-11-28T02:00:00Z",
            "status": "REMEDIATED",
            "fault_types": ["timeout"],
        }
    )
    remember(organisation[A], STATE_TABLE, "data-processor", entry)
    assert [p.incident_id for p in read_history(organisation[A], STATE_TABLE, "data-processor").incidents] == [
        "inc-member-a"
    ]
    assert read_history(clients, STATE_TABLE, "data-processor").incidents == []
    assert read_history(organisation[B], STATE_TABLE, "data-processor").incidents == []
    assert function_key(organisation[A], "data-processor") == arn(A)


class Recording:
    def __init__(self):
        self.calls = []

    async def call_tool(self, name, arguments):
        self.calls.append((name, arguments))
        raise AssertionError("not reached in these checks")  # pragma: no cover


def test_the_agents_call_their_tools_for_the_incidents_account_only():
    """Log text in member B naming A's function, or the central one, cannot steer a call there."""
    spec = ToolSpec(
        name="get_lambda_config",
        description="",
        input_schema={"type": "object", "properties": {"lambda_name": {"type": "string"}}},
    )
    executor = ToolExecutor(Recording(), [spec], function_name="data-processor", function_arn=arn(B))
    assert executor._bound({"lambda_name": "data-processor"}) == ({"lambda_name": arn(B)}, None)
    assert executor._bound({"lambda_name": f"{arn(B)}:live"}) == ({"lambda_name": f"{arn(B)}:live"}, None)
    for elsewhere in (arn(A), arn(CENTRAL), f"{arn(A)}:live"):
        outcome = anyio.run(executor.run, "get_lambda_config", {"lambda_name": elsewhere})
        assert not outcome.ok and not outcome.provider_called and "another account or Region" in outcome.error
    outcome = anyio.run(executor.run, "get_lambda_config", {"lambda_name": "orders-api"})
    assert not outcome.ok and not outcome.provider_called
    assert executor.provider.calls == []


def test_a_member_function_is_onboarded_with_that_accounts_own_credentials(
    clients, sample, organisation, lab, tmp_path, monkeypatch, capsys
):
    from incident_responder.cli.commands import main

    credentials = member_profile(lab.env, B, "member-b", tmp_path / "credentials")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("BASELINE_TABLE", sample.baseline_table)
    # A profile of another account than the ARN's, a pair the deployment does not list, a name without its account.
    for function, said in (
        (arn(A), f"acts in account {B.account}, not in {A.account}"),
        (arn(Member(B.account, "ap-south-1")), "not a member of this deployment"),
        ("data-processor", "needs the function's ARN"),
    ):
        assert main(["onboard", function, "--member-profile", "member-b"]) == 2
        assert said in capsys.readouterr().err
    assert main(["onboard", arn(B), "--member-profile", "member-b"]) == 0
    capsys.readouterr()
    # Now B's function is its own onboarded function: its alarm starts B's incident, the tools answer for it.
    incident, refused = admit(clients, alarm(B), sample.baseline_table)
    assert refused is None and incident.account_id == B.account
    member_clients, _ = OnboardedScope(clients, sample.baseline_table).resolve(arn(B))
    assert member_of(member_clients) == B
    tags = admin_clients(lab.env, B.account, B.region).get("lambda").list_tags(Resource=arn(B))["Tags"]
    assert tags.get("incident-responder:onboarded") == "true"


def test_the_guardrails_refuse_an_action_on_another_accounts_resource(clients, sample, organisation):
    from incident_responder.account.baseline import load_baseline
    from incident_responder.account.state import read_function_configuration
    from incident_responder.core.contracts import RemediationAction
    from incident_responder.guardrails.checks import check_action

    view = organisation[A]
    current = read_function_configuration(view, "data-processor")
    baseline = load_baseline(view, "data-processor").configuration

    def action(target: str) -> RemediationAction:
        return RemediationAction(
            fault_type="throttling",
            action_type="update_concurrency",
            target_resource=target,
            parameters={"function_name": "data-processor", "reserved_concurrent_executions": 10},
            risk_level="low",
            execution_order=1,
        )

    for elsewhere, said in ((arn(CENTRAL), f"account {CENTRAL.account}"), (arn(B), f"account {B.account}")):
        reasons = check_action(action(elsewhere), current, baseline, view)
        assert reasons and said in reasons[0] and f"not this account {A.account}" in reasons[0], reasons
    wrong_region = f"arn:aws:lambda:us-west-2:{A.account}:function:data-processor"
    assert (
        "Region us-west-2, not this Region eu-west-1" in check_action(action(wrong_region), current, baseline, view)[0]
    )
