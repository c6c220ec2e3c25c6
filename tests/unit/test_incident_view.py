"""`responder show` for a person: a summary and a timeline of each final status (incident_view.render_text)."""

from __future__ import annotations

import pytest

from incident_responder.reporting.view import render_text, timeline
from incident_responder.state.lifecycle import TERMINAL_STATUSES
from tests.incident_details import DIAGNOSIS, PROPOSAL, TIMINGS, _shown

DIAGNOSIS["evidence"] = [
    {"tool": "get_config_drift", "field": "differences[0].path", "value": "role.inline_policies.s3-access",
     "interpretation": "the policy differs from the baseline", "verified": True},
    {"tool": "get_recent_logs", "field": "events[9].message", "value": "AccessDenied",
     "interpretation": "denied", "verified": False},
]  # fmt: skip


@pytest.mark.parametrize("status", sorted(TERMINAL_STATUSES))
def test_each_final_status_reads_as_a_summary_and_a_timeline(status):
    text = render_text(_shown(status))
    lines = text.splitlines()
    assert lines[0] == f"incident data-processor-20261124T015632-125ce5b1b0: {status}"
    assert "  timeline:" in lines and lines[-1] == "  (responder show --json prints the whole record)"
    assert f"states visited: RECEIVED -> INVESTIGATING -> {status}" in text
    assert not text.lstrip().startswith("{")  # not JSON
    if status in {"ERROR", "FAILED", "PROPOSAL_FAILED", "REMEDIATION_FAILED"}:
        assert "  error: [ModelTransientError] throttled by the model" in lines
    if status not in {"ERROR", "SUPPRESSED"}:
        assert (
            "  root cause: data-processor: the execution role's s3-access changed from the baseline (removed)." in lines
        )
        assert "  evidence: 2 pointer(s), 1 verified against the tool output; grounded ratio 0.5" in lines
        assert any(line.strip().startswith("[UNVERIFIED] get_recent_logs") for line in lines)
        assert "  not checked: network not checked" in lines
    if PROPOSAL is _shown(status)["proposal"]:
        assert any(line.strip().startswith("1. restore_iam_policy on arn:aws:iam::") for line in lines)
        assert "    rejected by guardrails: update_function_configuration: no baseline" in lines
    expected = {
        "REMEDIATED": "  verification: VERIFIED: healthy",
        "ROLLED_BACK": "  verification: NOT_FIXED: still failing",
        "REJECTED": "  rejected by ops@example.com: not now",
    }
    if status in expected:
        assert expected[status] in lines
    if status == "ROLLED_BACK":
        assert "  rolled back: the symptom remained" in lines
    if status == "REMEDIATED":
        assert "  approved by ops@example.com (cli) at 2026-11-24T01:56:37Z" in lines


def test_the_timeline_is_in_the_order_things_happened_with_the_time_spent_in_each():
    rows = timeline({**TIMINGS, "odd_at": "not a time", "updated_at": "2026-11-24T01:56:39.047800+00:00"})
    assert [r[0] for r in rows] == ["DETECTED", "RECEIVED", "INVESTIGATING", "APPROVED", "ENDED", "ODD"]
    assert rows[0][1] == "2026-11-24 01:56:32.008Z"
    assert rows[0][2] == pytest.approx(1.70494)  # detected -> received
    assert rows[3][2] == pytest.approx(2.0478)  # approved -> ended
    assert rows[4][2] is None and rows[5] == ("ODD", "not a time", None)


def test_an_incident_with_little_stored_still_reads():
    text = render_text({"incident_id": "x", "status": None})
    assert text.splitlines()[0] == "incident x: UNKNOWN"
    # Pointers without the stored report are counted from the diagnosis itself.
    text = render_text({"incident_id": "x", "status": "DIAGNOSED", "diagnosis": DIAGNOSIS})
    assert "  evidence: 2 pointer(s), 1 verified against the tool output" in text.splitlines()
