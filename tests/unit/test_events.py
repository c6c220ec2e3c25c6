"""events/ (for `sam local invoke`) and events/env.json (`--env-vars`) cover every function in template.yaml."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.utilities.parser.models import SnsModel

from incident_responder.core.contracts import (
    ApprovalDecision,
    Diagnosis,
    FaultType,
    Incident,
    RemediationProposal,
    actions_digest,
    incident_from_event,
)
from incident_responder.core.settings import (
    ApprovalEndpointSettings,
    ApprovalRequestSettings,
    IngestSettings,
    InvestigateSettings,
    McpServerSettings,
    ProposeSettings,
    ReconcileSettings,
    RemediateSettings,
    ReportSettings,
    ReviewSettings,
    SweepSettings,
    VerifySettings,
)
from incident_responder.intake.alerts import parse_alert
from incident_responder.intake.errors import MalformedAlertError
from incident_responder.lab.template import load_template

EVENTS = Path(__file__).parents[2] / "events"
TEMPLATE = load_template()
FUNCTIONS = {
    logical_id: resource["Properties"]
    for logical_id, resource in TEMPLATE["Resources"].items()
    if resource["Type"] == "AWS::Serverless::Function"
}
SETTINGS_FOR_HANDLER = {
    "handlers.ingest.handler": IngestSettings,
    "handlers.investigate.handler": InvestigateSettings,
    "handlers.propose.handler": ProposeSettings,
    "handlers.diagnostics_mcp.handler": McpServerSettings,
    "handlers.remediation_mcp.handler": McpServerSettings,
    "handlers.reconcile.handler": ReconcileSettings,
    "handlers.reconcile.sweep_handler": SweepSettings,
    "handlers.report.handler": ReportSettings,
    "handlers.review.handler": ReviewSettings,
    "handlers.approval.request_handler": ApprovalRequestSettings,
    "handlers.approval.endpoint_handler": ApprovalEndpointSettings,
    "handlers.remediate.handler": RemediateSettings,
    "handlers.verify.handler": VerifySettings,
}
# The closed loop's events follow one incident (propose.json's) through REVIEWING to VERIFYING / ROLLING_BACK.
LIFECYCLE_EVENTS = [
    "review.json",
    "approval-request.json",
    "remediate-apply.json",
    "remediate-rollback.json",
    "verify.json",
]


def load(name: str) -> dict:
    return json.loads((EVENTS / name).read_text())


def event_prefix(logical_id: str) -> str:
    """``DiagnosticsMcpFunction`` -> ``diagnostics-mcp``: the events of a function start with it."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", logical_id.removesuffix("Function")).lower()


def declared_variables(logical_id: str) -> set[str]:
    globals_ = TEMPLATE["Globals"]["Function"].get("Environment", {}).get("Variables", {})
    own = FUNCTIONS[logical_id].get("Environment", {}).get("Variables", {})
    return set(globals_) | set(own)


@pytest.mark.parametrize("logical_id", sorted(FUNCTIONS))
def test_every_function_has_an_event(logical_id):
    prefix = event_prefix(logical_id)
    assert [p.name for p in EVENTS.glob(f"{prefix}*.json")], f"no events/{prefix}*.json for {logical_id}"


def test_every_handler_has_a_settings_model():
    assert {p["Handler"] for p in FUNCTIONS.values()} == set(SETTINGS_FOR_HANDLER)


@pytest.mark.parametrize("logical_id", sorted(FUNCTIONS))
def test_env_vars_file_resolves_each_function_environment(logical_id):
    """`sam local invoke --env-vars events/env.json` gives each function an environment its settings accept."""
    values = json.loads((EVENTS / "env.json").read_text())[logical_id]
    assert set(values) <= declared_variables(logical_id), "sam local only overrides variables the template declares"
    SETTINGS_FOR_HANDLER[FUNCTIONS[logical_id]["Handler"]].from_env(values)


@pytest.mark.parametrize("logical_id", sorted(FUNCTIONS))
def test_the_template_gives_every_required_setting(logical_id):
    model = SETTINGS_FOR_HANDLER[FUNCTIONS[logical_id]["Handler"]]
    required = {name.upper() for name, field in model.model_fields.items() if field.is_required()}
    assert required <= declared_variables(logical_id)


@pytest.mark.parametrize("name", ["ingest-cloudwatch-alarm.json", "ingest-project-alert.json"])
def test_ingest_events_parse_to_incidents(name):
    (record,) = SnsModel.model_validate(load(name)).Records
    assert parse_alert(record.Sns.Message).function_name == "data-processor"


def test_malformed_ingest_event_is_rejected_clearly():
    (record,) = SnsModel.model_validate(load("ingest-malformed-alert.json")).Records
    with pytest.raises(MalformedAlertError, match="not JSON"):
        parse_alert(record.Sns.Message)


@pytest.mark.parametrize("name", ["investigate.json", "propose.json", "review.json"])
def test_agent_events_carry_an_incident(name):
    assert Incident.model_validate(load(name)["incident"]).metric_name == "Errors"


def test_propose_event_carries_a_diagnosis_and_its_summary():
    investigation = load("propose.json")["investigation"]
    from incident_responder.core.contracts import Diagnosis
    from incident_responder.investigation.investigate import DiagnosisSummary

    Diagnosis.model_validate(investigation["diagnosis"])
    assert DiagnosisSummary.model_validate(investigation["diagnosis_summary"]).fault_types == ["permission_loss"]


# -- the closed loop: REVIEWING, AWAITING_APPROVAL, REMEDIATING / ROLLING_BACK, VERIFYING ---------------------
@pytest.mark.parametrize("name", LIFECYCLE_EVENTS)
def test_closed_loop_events_follow_the_proposed_incident(name):
    assert incident_from_event(load(name)) == Incident.model_validate(load("propose.json")["incident"])


def test_review_event_carries_a_ready_proposal_of_valid_actions():
    from incident_responder.proposal.propose import ProposalResult
    from incident_responder.remediation.remediate import parse_actions

    event = load("review.json")
    result = ProposalResult.model_validate(event["proposal"])
    assert result.outcome == "PROPOSAL_READY" and result.actions == len(result.proposal["actions"])
    proposal = RemediationProposal.model_validate(result.proposal)
    assert proposal.actions == parse_actions(result.proposal["actions"])
    diagnosis = Diagnosis.model_validate(event["investigation"]["diagnosis"])
    assert {a.fault_type for a in proposal.actions} <= set(diagnosis.fault_types)


class RecordingClients:
    """Stands in for AwsClients: the incident-state table's items in memory, every other call recorded."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def get(self, service: str) -> _RecordingClient:
        return _RecordingClient(self, service)


class _RecordingClient:
    def __init__(self, owner: RecordingClients, service: str) -> None:
        self.owner, self.service = owner, service

    def put_item(self, **kwargs: Any) -> dict:
        self.owner.items[kwargs["Item"]["incident_id"]["S"]] = kwargs["Item"]
        return {}

    def get_item(self, **kwargs: Any) -> dict:
        item = self.owner.items.get(kwargs["Key"]["incident_id"]["S"])
        return {"Item": item} if item else {}

    def __getattr__(self, operation: str):
        return lambda **kwargs: self.owner.calls.append((self.service, operation, kwargs)) or {}


def received_at(event: dict) -> datetime:
    return datetime.fromtimestamp(event["requestContext"]["timeEpoch"] / 1000, UTC)


SAMPLE_LINK_KEYS = ("sample-approve-key-for-sam-local-invoke-0001", "sample-reject-key-for-sam-local-invoke-0001")


def test_approval_events_request_show_and_decide_what_remediate_applies(monkeypatch):
    """approval-request.json sends the link approval-endpoint-get.json opens; the POST from that page decides,
    and what it tells Step Functions is remediate-apply.json's approval."""
    from handlers.approval import _form, _query, link_identity
    from incident_responder.approval import request as approval_request
    from incident_responder.approval.page import handle_http
    from incident_responder.approval.request import request_approval

    keys = iter(SAMPLE_LINK_KEYS)  # each link's key is random: the sample events carry these
    monkeypatch.setattr(approval_request.secrets, "token_urlsafe", lambda _: next(keys))
    from incident_responder.review.review import ReviewResult

    request, get, post = (
        load("approval-request.json"),
        load("approval-endpoint-get.json"),
        load("approval-endpoint-post.json"),
    )
    review = ReviewResult.model_validate(request["review"])
    assert review.outcome == "NEEDS_APPROVAL" and review.approval is None
    assert actions_digest(review.actions) == review.actions_digest
    assert request["execution_arn"].endswith(f":{review.incident_id}")  # the execution is named after the incident
    env = json.loads((EVENTS / "env.json").read_text())
    config = ApprovalRequestSettings.from_env(env["ApprovalRequestFunction"])
    table = ApprovalEndpointSettings.from_env(env["ApprovalEndpointFunction"]).incident_state_table
    assert table == config.incident_state_table
    clients = RecordingClients()
    request_approval(
        clients,
        table=config.incident_state_table,
        topic_arn=config.approval_topic_arn,
        approval_url=config.approval_url,
        incident=request["incident"],
        review=request["review"],
        task_token=request["task_token"],
        timeout_seconds=int(request["timeout_seconds"]),
        execution_arn=request["execution_arn"],
        ttl_days=config.incident_ttl_days,
        now=datetime(2026, 11, 23, 4, 51, 40, tzinfo=UTC),
    )
    ((service, operation, sent),) = clients.calls
    assert (service, operation) == ("sns", "publish")
    assert f"Approve: {config.approval_url}?{get['rawQueryString']}" in sent["Message"]

    shown = handle_http(
        clients,
        table=table,
        method=get["requestContext"]["http"]["method"],
        query=_query(get),
        decided_by=link_identity(get["requestContext"]["http"]),
        now=received_at(get),
    )
    assert shown.status == 200 and review.actions_digest in shown.body and not clients.calls[1:]

    assert post["requestContext"]["http"]["method"] == "POST"
    decided = handle_http(
        clients,
        table=table,
        method="POST",
        query=_query(post),
        form=_form(post),
        decided_by=link_identity(post["requestContext"]["http"]),
        now=received_at(post),
    )
    assert decided.status == 200, decided.body
    ((_, _, success),) = [call for call in clients.calls if call[1] == "send_task_success"]
    assert success["taskToken"] == request["task_token"]
    approval = ApprovalDecision.model_validate_json(success["output"])
    assert approval == ApprovalDecision.model_validate(load("remediate-apply.json")["approval"])


def test_remediate_apply_event_is_approved_actions():
    from incident_responder.remediation.remediate import check_approval, parse_actions

    event = load("remediate-apply.json")
    assert event["operation"] == "apply"
    actions = parse_actions(event["actions"])
    approval = ApprovalDecision.model_validate(event["approval"])
    assert (
        check_approval(actions, event["actions_digest"], approval)
        == load("approval-request.json")["review"]["actions_digest"]
    )
    assert event["actions"] == load("approval-request.json")["review"]["actions"]


def test_remediate_rollback_event_gives_a_reason():
    event = load("remediate-rollback.json")
    assert event["operation"] == "rollback" and event["reason"].startswith("the symptom remains: Not fixed:")


def test_verify_event_is_an_applied_remediation_of_the_approved_actions():
    from incident_responder.remediation.remediate import ApplyResult, parse_actions

    event = load("verify.json")
    actions = parse_actions(event["actions"])
    applied = ApplyResult.model_validate(event["remediation"])
    assert applied.outcome == "APPLIED"
    assert [s.execution_order for s in applied.applied] == [a.execution_order for a in actions]
    assert event["actions"] == load("remediate-apply.json")["actions"]
    diagnosed = Diagnosis.model_validate(load("propose.json")["investigation"]["diagnosis"]).fault_types
    assert [FaultType(f) for f in event["fault_types"]] == diagnosed
