"""Many accounts on the deployed path: an incident of a member account in another Region, from the central stack.

The lab as an organisation (:mod:`incident_responder.lab.organisation`): the central stack in 123456789012,
us-east-1, its functions acting as their own roles; member 210987654321 in eu-west-1 with member-account.yaml and
the sample data-processor workload (a function of the same name runs in the central account too). The member's
alarm reaches the central incident topic; ingest admits it for the allow-listed pair; the investigation reads the
member's function through its read role, remediate changes it through its remediation role, verify reads it again.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from incident_responder.account.baseline import load_baseline
from incident_responder.approval.page import render_review_page
from incident_responder.approval.record import load_approval_record
from incident_responder.core.members import Member
from incident_responder.lab.organisation import Organisation
from incident_responder.lab.pipeline.startup import LabPipeline
from incident_responder.lab.scenario import load_scenario
from incident_responder.reporting.report import collect, render_html

REPO = Path(__file__).parents[2]
MEMBER = Member("210987654321", "eu-west-1")
PARAMS = {k: "x" for k in ("incident", "digest", "decision", "token", "key")} | {"decision": "approve"}
REGION_ONLY = {"StringEquals": {"aws:RequestedRegion": "eu-west-1"}}
FUNCTION_ARN = f"arn:aws:lambda:{MEMBER.region}:{MEMBER.account}:function:data-processor"


@pytest.fixture(scope="module")
def organisation(lab):
    with LabPipeline.start(lab=lab, workers=True, organisation=Organisation((MEMBER,)), count_calls=True) as running:
        yield running


def test_a_member_incident_in_another_region_goes_remediated_from_the_central_stack(organisation):
    central_lambda = organisation.clients.get("lambda")
    central_timeout = central_lambda.get_function_configuration(FunctionName="data-processor")["Timeout"]
    member = organisation.member(MEMBER.account, MEMBER.region)
    member_lambda = member.clients.get("lambda")
    assert member_lambda.get_function_configuration(FunctionName="data-processor")["FunctionArn"] == FUNCTION_ARN

    record = member.run(load_scenario(REPO / "scenarios" / "timeout-too-low.yaml"))

    assert record.status == "REMEDIATED", record.model_dump()
    assert record.end_state["matches_baseline"], record.end_state
    # The member's function was restored; the central account's function of the same name was never touched.
    restored = member_lambda.get_function_configuration(FunctionName="data-processor")["Timeout"]
    assert restored == load_baseline(member.clients, "data-processor").configuration.timeout > 1
    assert central_lambda.get_function_configuration(FunctionName="data-processor")["Timeout"] == central_timeout
    # The responder's own calls were counted apart from the lab's (the workload's metrics are the lab's writes).
    calls = record.metrics["aws_calls_by_api"]
    assert record.metrics["aws_calls"] == sum(calls.values()) > 0
    assert calls["sts:AssumeRole"] >= 2 and calls["lambda:GetFunctionConfiguration"] >= 1, calls
    assert calls["lambda:UpdateFunctionConfiguration"] == 1, calls  # the one restore
    # Each reader reads what it judges: the role once, by the drift tool; the guardrails, the apply and verification
    # of a timeout's restore read no IAM (they read the parts their actions restore, the rest is the baseline's).
    assert calls["iam:ListRolePolicies"] == 1 and calls["iam:ListAttachedRolePolicies"] == 1, calls
    by_function = record.metrics["aws_calls_by_function"]
    assert sum(by_function.values()) == record.metrics["aws_calls"], by_function
    assert {"DiagnosticsMcpFunction", "RemediateFunction", "ReportFunction"} <= by_function.keys(), by_function
    assert "cloudwatch:PutMetricData" not in calls and "lambda:Invoke" not in calls, calls
    # Every read and change there went through the member's roles, each assumed by the central function it serves.
    from moto.sts.models import sts_backends

    assumed = {
        (r.role_arn.rsplit("/", 1)[-1], r.session_name) for r in sts_backends[MEMBER.account]["aws"].assumed_roles
    }
    functions = organisation.stack.functions
    assert ("incident-responder-remediate", functions["RemediateFunction"]) in assumed
    for reader in ("DiagnosticsMcpFunction", "RemediationMcpFunction", "ProposeFunction", "VerifyFunction"):
        assert ("incident-responder-read", functions[reader]) in assumed, (reader, assumed)
    assert {role for role, _ in assumed} == {"incident-responder-read", "incident-responder-remediate"}
    # Each session scoped to the incident's Region by its session policy (IAM, global, aside).
    policies = {r.policy for r in sts_backends[MEMBER.account]["aws"].assumed_roles}
    assert policies and all(json.loads(p)["Statement"][0]["Condition"] == REGION_ONLY for p in policies)
    # Its leases named the member's resources, apart from the central ones of the same name, and were given back.
    from incident_responder.remediation.lease import fence, holder
    from incident_responder.remediation.ledger import Ledger

    table = organisation.stack.physical["IncidentStateTable"]
    resources = Ledger(organisation.clients, table, record.incident_id).head()["resources"]
    assert resources and all(r.startswith(f"{MEMBER}/") for r in resources), resources
    assert all(holder(organisation.clients, table, r) is None for r in resources)
    assert all(fence(organisation.clients, table, r) >= 1 for r in resources)  # taken, then given back
    # The incident says where it was, and so does its report.
    detail = collect(
        organisation.clients,
        record.incident_id,
        state_table=table,
        context_table=organisation.stack.physical["IncidentContextTable"],
    )
    assert (detail["account_id"], detail["region"]) == (MEMBER.account, MEMBER.region)
    assert f"{MEMBER.account} {MEMBER.region}" in render_html(detail)
    # The person approved a change in that account and Region, and the page they saw said so.
    approval = load_approval_record(organisation.clients, table, record.incident_id)
    assert approval.where == f"account {MEMBER.account}, Region {MEMBER.region}"
    assert f"in account {MEMBER.account}, Region {MEMBER.region}?</h1>" in render_review_page(approval, PARAMS)


def test_doctor_checks_a_member_from_both_sides(organisation, tmp_path, monkeypatch):
    from incident_responder.cli.doctor_checks import FAIL, PASS, WARN
    from incident_responder.cli.doctor_members import check_members
    from incident_responder.lab.organisation import member_profile

    credentials = member_profile(organisation.lab.env, MEMBER, "member", tmp_path / "credentials")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    checks = {c.name: c for c in check_members(organisation.clients, organisation.stack.name, [MEMBER], "member")}
    assert {name: c.status for name, c in checks.items() if c.status != PASS} == {}, checks
    for name in ("listed", "incident-responder-read", "incident-responder-remediate", "alarms"):
        assert f"{MEMBER} {name}" in checks
    assert f"{FUNCTION_ARN} tag" in checks
    # Another Region of the same account: not listed, no member stack there, nothing onboarded.
    elsewhere = Member(MEMBER.account, "ap-south-1")
    checks = {c.name: c for c in check_members(organisation.clients, organisation.stack.name, [elsewhere], "member")}
    assert checks[f"{elsewhere} listed"].status == FAIL and "MemberRegions" in checks[f"{elsewhere} listed"].fix
    assert checks[f"{elsewhere} alarms"].status == WARN


def test_after_a_redeploy_the_functions_still_act_as_their_roles(organisation):
    """A redeploy (a scenario that changed the lab for good) re-creates every role: each function keeps the
    credentials its running servers sign with, now naming its new role, so the members' trust still admits it."""
    organisation.refresh()
    record = organisation.member(MEMBER.account, MEMBER.region).run(
        load_scenario(REPO / "scenarios" / "members" / "member-timeout-too-low.yaml")
    )
    assert record.status == "REMEDIATED", record.model_dump()
