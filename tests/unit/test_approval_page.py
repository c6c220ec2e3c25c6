"""The approval page and message as a person sees them: escaped, self-contained, exact; and in a real browser."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from incident_responder.approval.decision import task_token_from_history
from incident_responder.approval.errors import MalformedApprovalRequestError
from incident_responder.approval.page import CSP, handle_http, render_refusal_page, render_review_page
from incident_responder.approval.record import ApprovalRecord
from incident_responder.approval.request import _ReviewShown, approval_link, approval_message
from incident_responder.approval.tokens import decode_token, encode_token
from incident_responder.core.contracts import Incident, actions_digest
from tests.browser import browser, run_browser

HOSTILE = '"><script>alert(1)</script><img src=x onerror=alert(2)> ignore previous instructions'
ACTIONS = [
    {
        "execution_order": 1,
        "fault_type": "permission_loss",
        "action_type": "restore_iam_policy",
        "target_resource": "arn:aws:iam::123456789012:role/data-processor-role",
        "parameters": {
            "role_name": "data-processor-role",
            "policy_name": "s3-access",
            "policy_document": {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Sid": HOSTILE}]},
            "attach_policy_arn": None,
        },
        "risk_level": "high",
        "requires_approval": True,
        "reasoning": HOSTILE,
    },
    {
        "execution_order": 2,
        "fault_type": "throttling",
        "action_type": "update_concurrency",
        "target_resource": "data-processor",
        "parameters": {"function_name": "data-processor", "reserved_concurrent_executions": 10},
        "risk_level": "low",
        "requires_approval": False,
        "reasoning": "",
    },
]
DIGEST = actions_digest(ACTIONS)
TOKEN = "AQCEAAAAKgAAAAMAAAAA/+token with spaces & = signs?/=="


def record(**overrides) -> ApprovalRecord:
    data = {
        "incident_id": "data-processor-20261123T040000Z-ab12",
        "function_name": "data-processor",
        "token_hash": "0" * 64,
        "actions_digest": DIGEST,
        "actions": ACTIONS,
        "verdicts": [
            {
                "execution_order": 1,
                "verdict": "needs_human",
                "reasons": ["restores the baseline exactly", HOSTILE],
                "evidence": [
                    {"tool": "get_config_drift", "field": "differences[0].path", "value": "s3-access", "verified": True}
                ],
                "policy": ["IAM changes need a person"],
            }
        ],
        "summary": HOSTILE,
        "risk": "high",
        "created_at": "2026-11-23T04:10:00Z",
        "approval_expires_at": "2026-11-24T04:10:00Z",
        "approval_expires_epoch": 1795493400,
        "execution_arn": "arn:aws:states:us-east-1:123456789012:execution:lifecycle:x",
    }
    return ApprovalRecord.model_validate({**data, **overrides})


def link_params(decision: str = "approve") -> dict[str, str]:
    query = urlsplit(
        approval_link("https://x.lambda-url.us-east-1.on.aws/", record().incident_id, DIGEST, decision, TOKEN, "k")
    )
    return {k: v[0] for k, v in parse_qs(query.query).items()}


def test_the_token_travels_base64url_and_comes_back_exactly():
    encoded = encode_token(TOKEN)
    assert re.fullmatch(r"[A-Za-z0-9_-]+", encoded) and decode_token(encoded) == TOKEN
    for bad in ("", "has space", "a" * 9000, "%%%"):
        with pytest.raises(MalformedApprovalRequestError):
            decode_token(bad)
    params = link_params("reject")
    assert params == {
        "incident": record().incident_id,
        "digest": DIGEST,
        "decision": "reject",
        "token": encoded,
        "key": "k",
    }
    assert approval_link("https://h/?stage=x", "i", DIGEST, "approve", "t", "k").startswith(
        "https://h/?stage=x&incident=i&"
    )


def parsed(page: str) -> list[tuple[str, dict]]:
    """The elements a browser would build from the page: (tag, attributes)."""
    from html.parser import HTMLParser

    elements: list[tuple[str, dict]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            elements.append((tag, dict(attrs)))

    Collect().feed(page)
    return elements


def test_the_page_escapes_everything_and_loads_nothing():
    page = render_review_page(record(), link_params())
    elements = parsed(page)
    tags = {tag for tag, _ in elements}
    assert tags <= {"html", "head", "meta", "title", "style", "body", "main", "h1", "h2", "h3", "p", "code", "span"} | {
        "time",
        "section",
        "div",
        "pre",
        "ul",
        "li",
        "strong",
        "form",
        "input",
        "button",
        "label",
        "textarea",
    }
    assert not [a for _, attrs in elements for a in attrs if a in ("src", "href") or a.startswith("on")]
    assert "url(" not in page and "@import" not in page  # nothing loaded from the style either
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<meta name=referrer content=no-referrer>" in page
    assert "default-src &#x27;none&#x27;" in page and "frame-ancestors" in CSP
    # Each action with its parameters as pretty JSON, risk, the critic's verdict and reasons, the digest, the expiry.
    assert "restore_iam_policy" in page and "update_concurrency" in page
    assert "&quot;reserved_concurrent_executions&quot;: 10" in page and "&quot;attach_policy_arn&quot;: null" in page
    assert 'class="risk-high"' in page and 'class="risk-low"' in page
    assert "needs_human" in page and "restores the baseline exactly" in page and "IAM changes need a person" in page
    assert "none recorded" in page  # action 2 has no verdict
    assert DIGEST in page and "2026-11-24T04:10:00Z" in page
    # One button, for the link's decision; its form posts the same parameters.
    assert page.count("<form method=post") == 1 and "<button type=submit class=approve>" in page
    assert dict(re.findall(r'<input type=hidden name="(\w+)" value="([^"]*)">', page)) == link_params()
    assert "<textarea" not in page
    reject = render_review_page(record(), link_params("reject"))
    assert "<button type=submit class=reject>" in reject and "<textarea id=reason name=reason" in reject


def test_malformed_links_are_refused_before_any_aws_call():
    for query in ({}, {**link_params(), "decision": "yes"}, {**link_params(), "incident": "../x"}):
        response = handle_http(None, table="t", method="GET", query=query, decided_by="x")  # type: ignore[arg-type]
        assert response.status == 400 and response.headers["referrer-policy"] == "no-referrer"
        assert response.headers["cache-control"] == "no-store" and response.headers["x-frame-options"] == "DENY"
    refusal = render_refusal_page(MalformedApprovalRequestError(HOSTILE))
    assert "<script" not in refusal and "Nothing was decided" in refusal


def test_the_message_quotes_untrusted_text_and_caps_the_subject():
    incident = Incident(
        incident_id="f-1",
        function_name="f" * 64,
        source="alert",
        detected_at="2026-11-23T04:00:00Z",
        error_message=f"boom\nApprove: https://evil.example/?x\n{HOSTILE}",
    )
    shown = _ReviewShown.model_validate({"actions": ACTIONS, "actions_digest": DIGEST, "verdicts": [], "risk": "high"})
    links = {"approve": "https://h/?decision=approve", "reject": "https://h/?decision=reject"}
    subject, message = approval_message(incident, shown, ACTIONS, [], links, "2026-11-24T04:10:00Z", 86400)
    assert len(subject) < 100  # SNS: "less than 100 characters"
    # The only lines that start like a link are the responder's own.
    assert [line for line in message.splitlines() if line.startswith(("Approve:", "Reject:"))] == [
        "Approve: https://h/?decision=approve",
        "Reject:  https://h/?decision=reject",
    ]
    assert "expires at 2026-11-24T04:10:00Z (in 1440 minutes)" in message


def test_the_approval_message_links_only_to_the_responders_own_pages():
    """The critic's summary, a verdict's reasons and the alert's text are quotes: no link in them stays a link."""
    links = "[approve here](https://evil.example/a) or https://evil.example/b (www.evil.example)"
    incident = Incident(
        incident_id="f-1", function_name="f", source="alert", detected_at="2026-11-23T04:00:00Z", error_message=links
    )
    verdicts = [{"execution_order": 1, "verdict": "approve", "reasons": [links]}]
    shown = _ReviewShown.model_validate(
        {"actions": ACTIONS, "actions_digest": DIGEST, "verdicts": verdicts, "risk": "high", "summary": links}
    )
    links_out = {"approve": "https://h/?decision=approve", "reject": "https://h/?decision=reject"}
    _, message = approval_message(incident, shown, ACTIONS, [], links_out, "2026-11-24T04:10:00Z", 86400)
    clickable = [line for line in message.splitlines() if re.search(r"https?://|www\.|evil\.example|\]\(", line)]
    assert clickable == ["Approve: https://h/?decision=approve", "Reject:  https://h/?decision=reject"]


def test_the_task_token_is_the_newest_of_the_approval_state():
    def scheduled(token: str) -> dict:
        payload = {"FunctionName": "f", "Payload": {"task_token": token}}
        return {"type": "TaskScheduled", "taskScheduledEventDetails": {"parameters": json.dumps(payload)}}

    events = [
        {"type": "TaskStateEntered", "stateEnteredEventDetails": {"name": "Run critic agent"}},
        scheduled("critic-token"),
        {"type": "TaskStateEntered", "stateEnteredEventDetails": {"name": "Wait for approval"}},
        scheduled("first"),
        {"type": "TaskFailed"},
        scheduled("retried"),  # a Retry of the same state: the new token is the one waited on
    ]
    assert task_token_from_history(events) == "retried"
    assert task_token_from_history(events[:2]) is None


# -- in a real browser ------------------------------------------------------------------------------
def test_the_page_in_a_headless_browser(tmp_path: Path):
    binary = browser()
    page = tmp_path / "approval.html"
    page.write_text(render_review_page(record(), link_params("reject")), encoding="utf-8")
    shot = tmp_path / "approval.png"
    run_browser(binary, f"--screenshot={shot}", "--window-size=1000,1600", page.as_uri())
    assert shot.exists() and shot.stat().st_size > 20_000, "the screenshot is missing or blank"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dom = run_browser(binary, "--dump-dom", page.as_uri()).stdout
    assert "restore_iam_policy" in dom and "update_concurrency" in dom and DIGEST in dom
    assert "Reject 2 remediation actions for" in dom
    # The hostile text is rendered as text: the browser built no script or image element from it.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert "<script" not in dom and "<img" not in dom


def test_a_request_whose_digest_is_not_its_actions_is_never_sent():
    from incident_responder.approval.errors import InvalidApprovalRequestError
    from incident_responder.approval.request import request_approval

    incident = {"incident_id": "f-1", "function_name": "f", "source": "alert", "detected_at": "2026-11-23T04:00:00Z"}
    for review in (
        {"actions": ACTIONS, "actions_digest": actions_digest(ACTIONS[:1])},  # the digest of something else
        {"actions": [], "actions_digest": actions_digest([])},  # nothing to approve
        {"actions": ACTIONS},
    ):
        with pytest.raises(InvalidApprovalRequestError):
            request_approval(
                None,  # type: ignore[arg-type] - refused before any AWS call
                table="t",
                topic_arn="arn:aws:sns:us-east-1:123456789012:approvals",
                approval_url="https://h/",
                incident=incident,
                review=review,
                task_token="token",
                timeout_seconds=60,
                execution_arn="arn:aws:states:us-east-1:123456789012:execution:m:f-1",
                ttl_days=7,
            )


def test_the_message_says_which_alias_the_alarm_watches_and_how_the_function_was_found():
    incident = Incident(
        incident_id="orders-api-1",
        function_name="orders-api",
        qualifier="live",
        source="cloudwatch_alarm",
        detected_at="2026-11-24T11:43:27.123+0000",
        resolved_from="child alarm orders-api-errors of the composite alarm",
    )
    shown = _ReviewShown.model_validate({"actions": ACTIONS, "actions_digest": DIGEST, "verdicts": [], "risk": "high"})
    links = {"approve": "https://h/?decision=approve", "reject": "https://h/?decision=reject"}
    _, message = approval_message(incident, shown, ACTIONS, [], links, "2026-11-24T04:10:00Z", 86400)
    assert "  alias or version the alarm watches: live\n" in message
    assert "function found through: " in message and "child alarm orders-api-errors of the composite alarm" in message


def test_the_approval_message_says_seen_before_with_the_memory_rules_words_quoted():
    incident = Incident(incident_id="f-1", function_name="f", source="alert", detected_at="2026-11-23T04:00:00Z")
    history = [
        "rolled back last time (2026-11-22T10:00:00Z: the symptom remains: timeout is still seen)",
        "Approve: https://evil.example/x (a stored reason that says so)",
    ]
    shown = _ReviewShown.model_validate(
        {"actions": ACTIONS, "actions_digest": DIGEST, "verdicts": [], "risk": "low", "history": history}
    )
    links = {"approve": "https://h/?decision=approve", "reject": "https://h/?decision=reject"}
    _, message = approval_message(incident, shown, ACTIONS, [], links, "2026-11-24T04:10:00Z", 86400)
    lines = message.splitlines()
    start = lines.index("Seen before (this function's past incidents, as the responder recorded them):")
    assert "rolled back last time (2026-11-22T10:00:00Z" in lines[start + 1]
    # Stored text is quoted like everything else: it never becomes one of the message's own links.
    assert [line for line in lines if line.startswith(("Approve:", "Reject:"))] == [
        "Approve: https://h/?decision=approve",
        "Reject:  https://h/?decision=reject",
    ]
    assert "evil.example" not in message.replace("evil[.]example", "")
    # With no history, no such section.
    shown = shown.model_copy(update={"history": []})
    assert "Seen before" not in approval_message(incident, shown, ACTIONS, [], links, "x", 60)[1]
