"""Remediation lookups per fault, guardrails, the proposer (scripted and offline), and applying proposals (remediate)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import anyio
import pytest
from langchain_core.messages import AIMessage

from incident_responder.account.baseline import load_baseline, record_baseline
from incident_responder.actions.concurrency import get_concurrency_restore_info
from incident_responder.actions.function_configuration import get_function_config_restore_info
from incident_responder.actions.iam import get_iam_restore_info
from incident_responder.actions.network import get_network_restore_info
from incident_responder.agent.graph import run_agent
from incident_responder.core.contracts import ApprovalDecision, RemediationAction, actions_digest
from incident_responder.intake.alerts import parse_alert
from incident_responder.lab.account.resources import create_table
from incident_responder.lab.workloads.data_processor import DataProcessor
from incident_responder.proposal.proposer import proposal_message, proposer_spec
from incident_responder.remediation import remediate
from tests.fakes import (
    ScriptedChatModel,
    guard,
    inject,
    investigate_as_deployed,
    mcp_servers,
    propose_as_deployed,
    set_agent_environment,
)

FN = "data-processor"
KEY = "remediation-test-key"
STATE_TABLE = "incident-state"


# -- lookups --------------------------------------------------------------------------------------
def test_iam_restore_info_gives_the_baseline_document(clients, sample):
    inject(clients, ("iam_revoke", {"target": "s3"}))
    info = get_iam_restore_info(clients, FN)
    (policy,) = info.policies
    baseline = load_baseline(clients, FN).configuration.role.inline_policies["s3-access"]
    assert (policy.policy_name, policy.status) == ("s3-access", "missing")
    assert policy.restore_document == baseline and info.role_name == "data-processor-role" and info.drifted


def test_iam_restore_is_the_baseline_and_lists_what_it_drops(clients, sample):
    iam = clients.get("iam")
    doc = json.loads(json.dumps(load_baseline(clients, FN).configuration.role.inline_policies["s3-access"]))
    unrelated = {"Sid": "Queue", "Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"}
    iam.put_role_policy(
        RoleName=sample.role_name, PolicyName="s3-access", PolicyDocument=json.dumps({**doc, "Statement": [unrelated]})
    )
    info = get_iam_restore_info(clients, FN)
    (policy,) = info.policies
    assert policy.status == "modified"
    assert policy.restore_document == doc and policy.statements_not_in_baseline == [unrelated]
    assert guard(clients, *[a.model_dump(mode="json") for a in info.actions]).rejected_actions == []


def test_concurrency_restore_put_and_delete(clients, sample):
    inject(clients, ("throttle", {"reserved_concurrency": 0}))
    info = get_concurrency_restore_info(clients, FN)
    assert (info.current_reserved, info.baseline_reserved, info.action) == (0, 10, "put")
    clients.get("lambda").delete_function_concurrency(FunctionName=FN)
    record_baseline(clients, FN)  # a baseline without reservation
    inject(clients, ("throttle", {"reserved_concurrency": 1}))
    info = get_concurrency_restore_info(clients, FN)
    assert info.action == "delete"
    # The ready-made action deletes the reservation, and the guardrails keep it (a restore of the baseline).
    (ready,) = info.actions
    assert ready.parameters.reserved_concurrent_executions is None
    checked = guard(clients, ready.model_dump(mode="json"))
    assert checked.rejected_actions == [] and checked.actions[0].parameters["reserved_concurrent_executions"] is None


@pytest.mark.parametrize(
    "faults, lookup",
    [
        ([("iam_revoke", {"target": "both"})], get_iam_restore_info),
        ([("throttle", {"reserved_concurrency": 0})], get_concurrency_restore_info),
        ([("network_block", {})], get_network_restore_info),
        ([("timeout", {"seconds": 1}), ("memory", {"mb": 128})], get_function_config_restore_info),
    ],
    ids=["iam", "concurrency", "network", "config"],
)
def test_lookups_return_actions_ready_to_submit_that_the_guardrails_keep(clients, sample, faults, lookup):
    from incident_responder.core.contracts import ProposalSubmission

    inject(clients, *faults)
    info = lookup(clients, FN)
    assert info.actions, info
    submission = ProposalSubmission.model_validate({"actions": [a.model_dump(mode="json") for a in info.actions]})
    checked = guard(clients, *[a.model_dump(mode="json") for a in submission.actions])
    assert checked.rejected_actions == [] and len(checked.actions) == len(info.actions)


def test_network_restore_info(clients, sample):
    inject(clients, ("network_block", {}))
    info = get_network_restore_info(clients, FN)
    (group,) = info.security_groups
    assert group.security_group_id == sample.security_group_id and group.missing_egress_rules[0]["IpProtocol"] == "-1"
    (acl,) = info.network_acls
    assert acl.network_acl_id == sample.network_acl_id
    assert [(e["RuleNumber"], e["RuleAction"]) for e in acl.added_entries] == [(1, "deny")]


def test_function_config_restore_info(clients, sample):
    inject(clients, ("timeout", {"seconds": 1}), ("memory", {"mb": 128}))
    info = get_function_config_restore_info(clients, FN)
    assert info.changes == {"Timeout": 30, "MemorySize": 512}


def test_lookups_without_baseline_or_function_are_errors(clients, sample):
    tools = (
        get_iam_restore_info,
        get_concurrency_restore_info,
        get_network_restore_info,
        get_function_config_restore_info,
    )
    for tool in tools:
        assert tool(clients, "other-function").error.startswith("ResourceNotFoundException")
    clients.get("dynamodb").delete_item(TableName=sample.baseline_table, Key={"function_name": {"S": FN}})
    for tool in tools:
        assert "no baseline recorded" in tool(clients, FN).error


# -- the proposer ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def servers(lab):
    with mcp_servers(lab.env, KEY) as urls:
        yield urls


@pytest.fixture
def configured(servers, sample, monkeypatch):
    set_agent_environment(monkeypatch, sample, KEY, **servers)
    return sample


FAULT_CASES = {
    "s3": [("iam_revoke", {"target": "s3"})],
    "cloudwatch": [("iam_revoke", {"target": "cloudwatch"})],
    "both": [("iam_revoke", {"target": "both"})],
    "throttle-0": [("throttle", {"reserved_concurrency": 0})],
    "throttle-1": [("throttle", {"reserved_concurrency": 1})],
    "network": [("network_block", {})],
    "timeout": [("timeout", {"seconds": 1})],
    "memory": [("memory", {"mb": 128})],
    "s3+throttle+timeout": [
        ("iam_revoke", {"target": "s3"}),
        ("throttle", {"reserved_concurrency": 0}),
        ("timeout", {"seconds": 1}),
    ],
}


def apply_as_approved(clients, sample, incident, actions: list[dict]) -> remediate.ApplyResult:
    """remediate applies ``actions`` as a person approved them (its undo ledger in the state table)."""
    create_table(clients, "IncidentStateTable", STATE_TABLE)
    digest = actions_digest(actions)
    approval = ApprovalDecision(
        decision="approve",
        decided_by="alice@example.com",
        decided_at=datetime.now(UTC).isoformat(timespec="seconds"),
        channel="cli",
        actions_digest=digest,
    )
    return remediate.apply(
        clients,
        table=STATE_TABLE,
        incident=incident,
        actions=actions,
        actions_digest=digest,
        approval=approval,
        ttl_days=7,
        baseline_table=sample.baseline_table,
    )


@pytest.mark.parametrize("case", list(FAULT_CASES))
def test_offline_proposer_proposes_and_applying_it_heals_the_workload(clients, configured, case):
    inject(clients, *FAULT_CASES[case])
    burst = DataProcessor(clients).invoke(3)
    incident = parse_alert(burst.alert)
    investigation, _ = investigate_as_deployed(incident, clients)
    result, run = propose_as_deployed(incident, investigation.diagnosis, clients)
    assert result.outcome == "PROPOSAL_READY", result.end_reason
    proposal = result.proposal
    assert proposal["actions"] and proposal["rejected_actions"] == [] and proposal["unresolvable_faults"] == []
    assert {a["fault_type"] for a in proposal["actions"]} == set(investigation.diagnosis["fault_types"])
    assert run.llm_calls <= 8
    applied = apply_as_approved(clients, configured, incident, proposal["actions"])
    assert applied.outcome == "APPLIED", applied.error
    assert [s.status for s in applied.steps] == ["applied"] * len(proposal["actions"])
    assert DataProcessor(clients).invoke(3).healthy
    assert not get_function_config_restore_info(clients, FN).changes


def test_application_bug_ends_ready_with_no_actions(clients, configured):
    burst = DataProcessor(clients).invoke(2, app_error="KeyError: 'order_id'")
    incident = parse_alert(burst.alert)
    investigation, _ = investigate_as_deployed(incident, clients)
    result, _ = propose_as_deployed(incident, investigation.diagnosis, clients)
    assert result.outcome == "PROPOSAL_READY"
    assert result.proposal["actions"] == [] and result.unresolvable_faults == ["application_error"]


def test_whatever_the_model_says_guardrails_decide(clients, configured):
    """A model swayed by hostile text proposes admin access and a wildcard; neither survives."""
    inject(clients, ("iam_revoke", {"target": "s3"}))
    incident = parse_alert(DataProcessor(clients).invoke(1).alert)
    # An application error too, which a person takes over: so the model is asked (a proposal the lookups determine
    # alone is made without it) and says what it says.
    diagnosis = {"fault_types": ["permission_loss", "application_error"], "root_cause": "role lost s3", "evidence": []}
    hostile = {
        "actions": [
            {
                "fault_type": "permission_loss",
                "action_type": "restore_iam_policy",
                "target_resource": "r",
                "parameters": {
                    "role_name": "data-processor-role",
                    "attach_policy_arn": "arn:aws:iam::aws:policy/AdministratorAccess",
                },
            },
            {
                "fault_type": "permission_loss",
                "action_type": "restore_iam_policy",
                "target_resource": "r",
                "parameters": {
                    "role_name": "data-processor-role",
                    "policy_name": "s3-access",
                    "policy_document": {
                        "Version": "2012-10-17",
                        "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
                    },
                },
            },
        ],
    }
    model = ScriptedChatModel(
        responses=[
            AIMessage(
                content="", tool_calls=[{"name": "submit_proposal", "args": hostile, "id": "p", "type": "tool_call"}]
            )
        ]
    )
    result, _ = propose_as_deployed(incident, diagnosis, clients, model=model)
    assert result.outcome == "PROPOSAL_READY"
    assert result.proposal["actions"] == [] and result.rejected == 2
    reasons = " ".join(r for rejected in result.proposal["rejected_actions"] for r in rejected["reasons"])
    assert "AdministratorAccess was not attached in the baseline" in reasons and "wildcard" in reasons


def test_mismatched_parameters_are_sent_back_to_the_proposer(clients, configured):
    from tests.fakes import logs_provider

    incident = parse_alert({"function_name": FN, "detected_at": "2026-11-23T04:00:00Z", "error_type": "X"})
    bad = {
        "actions": [
            {
                "fault_type": "throttling",
                "action_type": "update_concurrency",
                "target_resource": FN,
                "parameters": {"role_name": "r"},
            }
        ],
    }
    good = {"actions": [], "unresolvable_faults": ["unknown"]}

    def call(args, n):
        return AIMessage(
            content="", tool_calls=[{"name": "submit_proposal", "args": args, "id": f"p{n}", "type": "tool_call"}]
        )

    model = ScriptedChatModel(responses=[call(bad, 1), call(good, 2)])
    run = anyio.run(
        lambda: run_agent(
            proposer_spec(None, incident.incident_id),
            model,
            logs_provider(),
            proposal_message(incident, {"fault_types": ["unknown"]}),
        )
    )
    assert run.end_reason == "submitted" and run.llm_calls == 2
    rejection = [m.content for m in run.messages if getattr(m, "status", "") == "error"][0]
    assert "submit_proposal rejected" in rejection and "reserved_concurrent_executions" in rejection
    assert model.seen[0]["tools"] == ["submit_proposal"]  # only remediation lookups (none here) and the terminal tool


def test_remediation_action_model_is_what_the_proposal_holds():
    assert RemediationAction.model_json_schema()["properties"]["action_type"]
