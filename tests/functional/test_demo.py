"""`responder demo` (what `make demo` runs) works from a clean process and tells the story."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

# Each test starts the `responder` command (and its lab) in a process of its own.
pytestmark = pytest.mark.slow


def test_demo_runs_end_to_end(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MCP_", "MOTO_", "RESPONDER_"))}
    out = subprocess.run(
        [sys.executable, "-m", "incident_responder.cli", "demo", "--out", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = out.stdout
    assert "deploying template.yaml" in text
    for state in (
        "RECEIVED",
        "INVESTIGATING",
        "Run investigator agent",
        "DIAGNOSED",
        "PROPOSING",
        "PROPOSAL_READY",
        "REVIEWING",
        "Run critic agent",
        "AWAITING_APPROVAL",
        "Wait for approval",
        "REMEDIATING",
        "Apply actions",
        "VERIFYING",
        "Verify fix",
        "REMEDIATED",
        "Remediated",
    ):
        assert f"-> {state}" in text
    assert ": REMEDIATED" in text and "fault types: permission_loss" in text
    assert "action 1: needs_human (policy: IAM and network changes need a person" in text
    assert "approved by approval link" in text and "user agent lab-approver/1.0 (link)" in text
    assert "verification: VERIFIED" in text
    assert "1. restore_iam_policy on arn:aws:iam::123456789012:role/data-processor-role" in text
    assert "[verified] get_config_drift" in text and "UNVERIFIED" not in text
    assert "['succeeded', 'succeeded', 'succeeded'], alarm: False" in text
    assert "configuration back at its baseline: True" in text and text.rstrip().endswith("REMEDIATED and verified")
    assert list(tmp_path.glob("*/execution.svg")) and list(tmp_path.glob("*/history.json"))
    # One "alert to end" for one incident: the demo says what its report says.
    (spent,) = re.findall(r"; ([\d.]+ s) alert to end", text)
    (report,) = tmp_path.glob("*/report.html")
    assert f">{spent}<" in report.read_text(), spent
    assert '"level":"INFO"' not in text  # the functions' own logs stay out of the story
    assert "Traceback" not in out.stderr
