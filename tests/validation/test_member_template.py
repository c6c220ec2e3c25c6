"""member-account.yaml, the template a member account deploys: generated from template.yaml (never edited by hand), so
its roles hold exactly the central functions' own statements on the account's resources, every explicit deny of the
remediate role included; only the central deployment's functions may assume them, and only with the external id."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from incident_responder.lab.template import load_template
from tests.scripts_by_path import load_script

REPO = Path(__file__).resolve().parents[2]
CFN_LINT = REPO / ".tools" / "venv" / "bin" / "cfn-lint"
MEMBER = REPO / "member-account.yaml"
# What a reader may do: read. (Every Allow of the read role begins with one of these verbs.)
READ_VERBS = ("Get", "List", "Describe", "Lookup", "Filter", "BatchGet")


GENERATOR = load_script("member_template")
TEMPLATE = load_template(MEMBER)
CENTRAL = load_template()


def _statements(role: str) -> list[dict[str, Any]]:
    return [
        s
        for resource in TEMPLATE["Resources"].values()
        if resource["Type"] == "AWS::IAM::ManagedPolicy" and resource["Properties"]["Roles"] == [{"Ref": role}]
        for s in resource["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return action if isinstance(action, list) else [action]


def _without_sid(statement: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in statement.items() if k != "Sid"}, sort_keys=True)


def test_the_committed_template_is_what_the_script_renders():
    assert GENERATOR.main(["--check"]) == 0, "run .venv/bin/python scripts/member_template.py and commit the result"


@pytest.mark.skipif(not CFN_LINT.exists(), reason="cfn-lint is not installed in .tools (run `make tools`)")
def test_cfn_lint_passes():
    out = subprocess.run([str(CFN_LINT), str(MEMBER)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]


@pytest.mark.parametrize(
    "role, functions",
    [("ReadRole", GENERATOR.READERS), ("RemediationRole", [GENERATOR.WRITER])],
)
def test_only_the_central_deployments_functions_may_assume_a_role_and_only_with_the_external_id(role, functions):
    (trust,) = TEMPLATE["Resources"][role]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Effect"] == "Allow" and trust["Action"] == "sts:AssumeRole"
    assert trust["Principal"] == {"AWS": {"Fn::Sub": "arn:${AWS::Partition}:iam::${CentralAccountId}:root"}}
    assert trust["Condition"]["StringEquals"] == {"sts:ExternalId": {"Ref": "ExternalId"}}
    principals = [p["Fn::Sub"] for p in trust["Condition"]["ArnLike"]["aws:PrincipalArn"]]
    assert principals == [
        f"arn:${{AWS::Partition}}:iam::${{CentralAccountId}}:role/${{CentralStackName}}-{f}Role-*" for f in functions
    ]
    assert TEMPLATE["Parameters"]["ExternalId"]["NoEcho"] and TEMPLATE["Parameters"]["ExternalId"]["MinLength"] >= 16
    # The remediate function alone may assume the role that changes the account.
    if role == "RemediationRole":
        assert all("Remediate" in p for p in principals)


def test_the_read_role_only_reads_and_holds_every_readers_grant_on_the_account():
    allowed = [a for s in _statements("ReadRole") if s["Effect"] == "Allow" for a in _actions(s)]
    assert allowed and all(a.split(":", 1)[1].startswith(READ_VERBS) for a in allowed), allowed
    # Each reader's statements on the account's resources are there (the same grant once, whichever reader has it).
    kept = {_without_sid(s) for s in _statements("ReadRole")}
    for function in GENERATOR.READERS:
        for statement in GENERATOR.statements_of(CENTRAL, function):
            assert _without_sid(statement) in kept, (function, statement.get("Sid"))


def test_the_remediation_role_is_the_remediate_functions_own_statements_every_deny_included():
    central = [
        s for p in CENTRAL["Resources"]["RemediateFunction"]["Properties"]["Policies"] for s in p.get("Statement", [])
    ]
    member = _statements("RemediationRole")
    assert [_without_sid(s) for s in member] == [
        _without_sid(s) for s in GENERATOR.statements_of(CENTRAL, "RemediateFunction")
    ]
    denies = [s for s in central if s["Effect"] == "Deny"]
    assert len(denies) >= 4 and all(s in member for s in denies)
    # What stays in the central account: the undo ledger, the baselines, the state machine's executions.
    left = {s["Sid"] for s in central} - {s["Sid"] for s in member}
    assert left == {
        "UndoLedger",
        "ReadBaseline",
        "IsTheLeaseHolderStillRunning",
        "AssumeTheMemberRemediateRole",
        "ReadTheMemberList",
    }
    # Every write is on onboarded resources only (their tag), as in the central account.
    for statement in member:
        writes = [a for a in _actions(statement) if not a.split(":", 1)[1].startswith(READ_VERBS)]
        if statement["Effect"] == "Allow" and writes:
            assert statement["Condition"]["StringEquals"] == {"aws:ResourceTag/incident-responder:onboarded": "true"}


def test_the_roles_are_created_once_per_account_and_tagged_as_the_responders_own():
    for role in ("ReadRole", "RemediationRole"):
        resource = TEMPLATE["Resources"][role]
        assert resource["Condition"] == "HoldsTheRoles"  # IAM is global: one Region's instance creates them
        assert {"Key": "incident-responder:component", "Value": "responder"} in resource["Properties"]["Tags"]
    assert TEMPLATE["Conditions"]["HoldsTheRoles"] == {"Fn::Equals": [{"Ref": "AWS::Region"}, {"Ref": "RolesRegion"}]}
    for name, resource in TEMPLATE["Resources"].items():
        if resource["Type"] == "AWS::IAM::ManagedPolicy":
            assert resource["Condition"] == "HoldsTheRoles", name
            size = len(json.dumps(resource["Properties"]["PolicyDocument"], separators=(",", ":")))
            assert size <= GENERATOR.MANAGED_POLICY_LIMIT, name


def test_alarms_going_to_alarm_are_forwarded_to_the_central_bus_and_nothing_else_is():
    rule = TEMPLATE["Resources"]["ForwardAlarms"]["Properties"]
    assert rule["EventPattern"] == {
        "source": ["aws.cloudwatch"],
        "detail-type": ["CloudWatch Alarm State Change"],
        "detail": {"state": {"value": ["ALARM"]}},
    }
    (target,) = rule["Targets"]
    assert target["Arn"] == {"Fn::Sub": GENERATOR.CENTRAL_BUS}
    role = TEMPLATE["Resources"]["ForwardAlarmsRole"]["Properties"]
    ((statement,),) = [p["PolicyDocument"]["Statement"] for p in role["Policies"]]
    assert statement == {
        "Effect": "Allow",
        "Action": "events:PutEvents",
        "Resource": {"Fn::Sub": GENERATOR.CENTRAL_BUS},
    }
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "events.amazonaws.com"}
    assert trust["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}


def test_a_statement_on_the_central_stacks_own_resources_is_never_copied():
    own = {"Sid": "X", "Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": {"Fn::GetAtt": ["T", "Arn"]}}
    named = {"Sid": "Y", "Effect": "Allow", "Action": "states:DescribeExecution", "Resource": {"Fn::Sub": "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:execution:${AWS::StackName}-x:*"}}  # fmt: skip
    parameter = {"Sid": "Z", "Effect": "Allow", "Action": "s3:GetObject", "Resource": {"Fn::Sub": "${Bucket.Arn}/*"}}
    account = {"Sid": "W", "Effect": "Allow", "Action": "lambda:GetPolicy", "Resource": {"Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:*"}}  # fmt: skip
    deny = {**named, "Effect": "Deny"}
    kept = [s["Sid"] for s in (own, named, parameter, account, deny) if GENERATOR._about_the_account(s)]
    assert kept == ["W", "Y"]  # a deny bounds the role wherever it acts


# -- the central side: the bus the member accounts' alarms arrive on -------------------------------------------------
def test_the_central_stack_has_a_member_alarm_bus_only_with_member_accounts_and_only_they_may_put_on_it():
    resources = CENTRAL["Resources"]
    for name in ("MemberAlarmBus", "MemberAlarmBusPolicy", "MemberAlarmRule"):
        assert resources[name]["Condition"] == "HasMemberAccounts", name
    assert CENTRAL["Parameters"]["MemberAccounts"] == {**CENTRAL["Parameters"]["MemberAccounts"], "Default": ""}
    assert CENTRAL["Conditions"]["HasMemberAccounts"] == {
        "Fn::Not": [{"Fn::Equals": [{"Fn::Join": [",", {"Ref": "MemberAccounts"}]}, ""]}]
    }
    # The member template's default bus is the default stack's (samconfig.toml deploys "incident-responder").
    bus = resources["MemberAlarmBus"]["Properties"]["Name"]["Fn::Sub"].replace(
        "${AWS::StackName}", "incident-responder"
    )
    assert bus == TEMPLATE["Parameters"]["CentralEventBusName"]["Default"]
    assert TEMPLATE["Parameters"]["CentralStackName"]["Default"] == "incident-responder"
    statement = resources["MemberAlarmBusPolicy"]["Properties"]["Statement"]
    assert statement == {
        "Effect": "Allow",
        "Principal": {"AWS": {"Ref": "MemberAccounts"}},
        "Action": "events:PutEvents",
        "Resource": {"Fn::GetAtt": ["MemberAlarmBus", "Arn"]},
    }


def test_the_member_alarm_rule_sends_alarm_changes_to_the_incident_topic_only():
    rule = CENTRAL["Resources"]["MemberAlarmRule"]["Properties"]
    assert rule["EventBusName"] == {"Ref": "MemberAlarmBus"}
    assert rule["EventPattern"] == TEMPLATE["Resources"]["ForwardAlarms"]["Properties"]["EventPattern"]
    assert rule["Targets"] == [{"Id": "incident-topic", "Arn": {"Ref": "IncidentTopic"}}]
    # The topic takes it as it takes this account's own rules: a rule on any bus of this account (rule/BUS/NAME).
    (publish,) = [
        s
        for s in CENTRAL["Resources"]["IncidentTopicPolicy"]["Properties"]["PolicyDocument"]["Statement"]
        if s["Sid"] == "EventBridgeRulesPublish"
    ]
    assert publish["Condition"]["ArnLike"]["aws:SourceArn"]["Fn::Sub"].endswith(":${AWS::AccountId}:rule/*")
