"""The hand-over steps where people look: the report, `responder show`, the notification, the chat notices and the
approval page; each step with the runbook it cites, the proposer's words escaped or quoted, never live markup."""

from __future__ import annotations

from incident_responder.approval.page import render_review_page
from incident_responder.approval.record import ApprovalRecord
from incident_responder.approval.request import _ReviewShown, approval_link, approval_message
from incident_responder.core.contracts import Incident, RemediationProposal, actions_digest
from incident_responder.notify import chat
from incident_responder.notify.notifications import proposal_notification
from incident_responder.reporting.report import render_html
from incident_responder.reporting.view import render_text

CITATION = "runbook:mode/eni-limit-reached@" + "ab" * 32
HOSTILE = "<script>alert(1)</script> ask #network-oncall <!channel> https://evil.example/x"
STEPS = [
    {"fault_type": "vpc_capacity_exhausted", "text": "Ask for a higher ENI quota", "runbook": CITATION},
    {"fault_type": "vpc_capacity_exhausted", "text": HOSTILE, "runbook": None},
]
INCIDENT = Incident(
    incident_id="data-processor-20261123T040000Z-ab12",
    function_name="data-processor",
    source="cloudwatch_alarm",
    detected_at="2026-11-23T04:00:00Z",
)
PROPOSAL = {
    "incident_id": INCIDENT.incident_id,
    "actions": [],
    "unresolvable_faults": ["vpc_capacity_exhausted"],
    "handover": STEPS,
}


ACTIONS = [
    {
        "execution_order": 1,
        "fault_type": "timeout",
        "action_type": "update_function_configuration",
        "target_resource": "data-processor",
        "parameters": {"function_name": "data-processor", "timeout": 30},
        "risk_level": "low",
        "requires_approval": True,
        "reasoning": "",
    }
]
DIGEST = actions_digest(ACTIONS)


def record(**overrides) -> ApprovalRecord:
    data = {
        "incident_id": INCIDENT.incident_id,
        "function_name": "data-processor",
        "token_hash": "0" * 64,
        "actions_digest": DIGEST,
        "actions": ACTIONS,
        "risk": "low",
        "created_at": "2026-11-23T04:10:00Z",
        "approval_expires_at": "2026-11-24T04:10:00Z",
        "approval_expires_epoch": 1795493400,
        "execution_arn": "arn:aws:states:us-east-1:123456789012:execution:lifecycle:x",
    }
    return ApprovalRecord.model_validate({**data, **overrides})


def link_params() -> dict[str, str]:
    from urllib.parse import parse_qs, urlsplit

    link = approval_link("https://x.lambda-url.us-east-1.on.aws/", INCIDENT.incident_id, DIGEST, "approve", "t", "k")
    return {k: v[0] for k, v in parse_qs(urlsplit(link).query).items()}


def test_the_report_and_show():
    detail = {
        "incident_id": INCIDENT.incident_id,
        "function_name": "data-processor",
        "status": "PROPOSAL_READY",
        "proposal": PROPOSAL,
    }
    page = render_html(detail)
    assert "Ask for a higher ENI quota" in page and f"follows <code>{CITATION}</code>" in page
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    text = render_text(detail)
    assert f"hand-over (vpc_capacity_exhausted): Ask for a higher ENI quota [{CITATION}]" in text


def test_the_notification_quotes_the_steps_with_their_runbook():
    proposal = RemediationProposal.model_validate(PROPOSAL)
    message = proposal_notification(INCIDENT, {"fault_types": ["vpc_capacity_exhausted"]}, proposal, reference=None)
    assert f'- vpc_capacity_exhausted: "Ask for a higher ENI quota" (follows {CITATION})' in message.message
    assert "https://evil" not in message.message and "never authorises" in message.message


def test_the_chat_notices():
    ended = chat.incident_ended(
        {"incident_id": INCIDENT.incident_id, "status": "PROPOSAL_READY", "proposal": PROPOSAL}, None, "s3://b/k"
    )
    description = ended["content"]["description"]
    assert f"(follows `{CITATION}`)" in description
    assert "<!channel>" not in description and "<script>" not in description
    waiting = chat.awaiting_approval(INCIDENT.incident_id, "data-processor", [], "high", "2026-11-24T04:10:00Z", STEPS)
    assert "Ask for a higher ENI quota" in waiting["content"]["description"]


def test_the_approval_page_and_message_show_the_steps_outside_the_decision():
    page = render_review_page(record(handover=STEPS), link_params())
    assert "For a person (no action fixes these)" in page and f"<code>{CITATION}</code>" in page
    assert "<script>alert(1)" not in page and "Not part of this decision" in page
    assert "For a person" not in render_review_page(record(), link_params())
    shown = _ReviewShown.model_validate({"actions": record().actions, "actions_digest": DIGEST, "handover": STEPS})
    _, message = approval_message(INCIDENT, shown, record().actions, [], {"approve": "a", "reject": "r"}, "x", 60)
    assert f"(follows {CITATION})" in message and f"Digest of exactly these actions: {DIGEST}" in message


def test_the_approval_record_keeps_the_steps_it_was_shown():
    import json

    from incident_responder.state import keys

    data = record().model_dump()
    item = {
        k: {"S": json.dumps(v)} if k in ("actions", "verdicts", "link_keys") else {"S": str(v)}
        for k, v in data.items()
        if isinstance(v, str | list | dict) and k not in ("handover", "history")
    }
    item = {(f"{k}_json" if k in ("actions", "verdicts", "link_keys") else k): v for k, v in item.items()}
    item["incident_id"] = {"S": keys.approval(data["incident_id"])}
    item["approval_expires_epoch"] = {"N": "1795493400"}
    item["handover_json"] = {"S": json.dumps(STEPS)}
    assert ApprovalRecord.from_item(item).handover == STEPS
    del item["handover_json"]  # a record written before hand-over steps were kept
    assert ApprovalRecord.from_item(item).handover == []
