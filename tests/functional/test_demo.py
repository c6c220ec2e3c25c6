"""`responder demo` (what `make demo` runs) works from a clean process and tells the story."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize("fault, evidence", [("iam_revoke", "drift at role.inline_policies.s3-access")])
def test_demo_runs_end_to_end(fault, evidence):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MCP_", "MOTO_"))}
    out = subprocess.run(
        [sys.executable, "-m", "incident_responder.cli", "demo", "--fault", fault],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "AccessDenied" in out.stdout
    assert evidence in out.stdout
    assert "alert on SNS: data-processor-errors" in out.stdout
    assert out.stdout.count("succeeded") == 6  # healthy before the fault and after restore
    assert "INVESTIGATING: supervisor agent" in out.stdout
    assert ": DIAGNOSED (submitted)" in out.stdout
    assert "fault types: permission_loss" in out.stdout
    assert "[verified] get_config_drift" in out.stdout and "UNVERIFIED" not in out.stdout
    assert "Traceback" not in out.stderr
