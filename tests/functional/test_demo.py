"""`responder demo` (what `make demo` runs) works from a clean process and tells the story."""

from __future__ import annotations

import os
import subprocess
import sys


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
        "Run supervisor agent",
        "DIAGNOSED",
        "PROPOSING",
        "PROPOSAL_READY",
        "Done",
    ):
        assert f"-> {state}" in text
    assert ": PROPOSAL_READY" in text and "fault types: permission_loss" in text
    assert "1. restore_iam_policy on arn:aws:iam::123456789012:role/data-processor-role" in text
    assert "[verified] get_config_drift" in text and "UNVERIFIED" not in text
    assert "burst after restore: ['succeeded', 'succeeded', 'succeeded'], alarm: False" in text
    assert list(tmp_path.glob("*/execution.svg")) and list(tmp_path.glob("*/history.json"))
    assert '"level":"INFO"' not in text  # the functions' own logs stay out of the story
    assert "Traceback" not in out.stderr
