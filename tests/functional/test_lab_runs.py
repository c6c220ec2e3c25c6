"""Whole lab runs from the command line (`responder run`, `responder demo`), each in its own process.

Apart from tests/functional/test_lab_cli.py so the suite's workers can run the two files side by side.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.lab_cli import REPO, STRAY, clean_env, responder
from tests.report_checks import assert_report

# Each test starts the `responder` command (and its lab) in a process of its own.
pytestmark = pytest.mark.slow


def test_run_ignores_client_settings_meant_for_other_servers(tmp_path):
    """The lab's agents sign for the lab's function URLs whatever the shell exports."""
    scenario = str(REPO / "scenarios" / "s3-policy-revoked.yaml")
    out = responder("run", scenario, "--json", "--verbose", env={**clean_env(tmp_path), **STRAY}, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    # The final record, as JSON, for machines: the functions' own logs and metrics (--verbose) go to stderr.
    record = json.loads(out.stdout)
    for key in ("incident_id", "status", "error_category", "diagnosis", "proposal", "metrics", "execution"):
        assert key in record
    assert record["status"] == "REMEDIATED" and record["proposal"]["actions"]
    assert record["approval"]["approval_channel"] == "link" and record["end_state"]["matches_baseline"]
    assert set(record["metrics"]) >= {"tool_calls", "llm_calls", "total_tokens", "latency_ms"}
    assert record["execution"]["states_visited"][0] == "RECEIVED"
    assert record["execution"]["name"] == record["incident_id"]
    # Live progress on stderr: each lifecycle status as the incident reaches it, then a final line.
    progress = out.stderr.splitlines()
    reached = [
        line.split()[-1]
        for line in progress
        if line.startswith("  ") and line.rstrip().endswith(("RECEIVED", "INVESTIGATING", "REMEDIATED"))
    ]
    assert reached[:2] == ["RECEIVED", "INVESTIGATING"] and reached[-1] == "REMEDIATED", out.stderr[-2000:]
    assert progress[-1].startswith("s3-policy-revoked: REMEDIATED (done) in "), progress[-1]
    # Third-party notices the lab itself causes (and handles) are not shown to the person running it.
    for noise in ("No Moto CloudFormation support", "unpublished metrics", "No application metrics to publish"):
        assert noise not in out.stderr, out.stderr[-2000:]
    # The metrics the deployed functions emit on this run, as CloudWatch reads them (EMF), each under the service
    # the dashboard looks for it (tests/validation/test_dashboard.py reads the same names from the code).
    from tests.emitted_metrics import _emitted

    emitted: dict[tuple[str, str], list[dict]] = {}
    for line in progress:
        blob = json.loads(line) if line.startswith('{"_aws"') else None
        for directive in (blob or {}).get("_aws", {}).get("CloudWatchMetrics", []):
            assert directive["Namespace"] == "IncidentResponder"
            for metric in directive["Metrics"]:
                emitted.setdefault((blob["service"], metric["Name"]), []).append(blob)
    known = _emitted()
    assert all(name in known.get(service, set()) for service, name in emitted), sorted(emitted)
    names = {name for _, name in emitted}
    assert {"IncidentsStarted", "ToolDuration", "ModelDuration", "ModelInputTokens", "ModelOutputTokens"} <= names
    assert {"ApprovalsRequested", "ActionsApplied", "Verified", "IncidentsEnded", "IncidentDuration"} <= names
    (ended,) = emitted[("report", "IncidentsEnded")]
    (dimensions,) = ended["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
    assert ended["status"] == "REMEDIATED" and set(dimensions) == {"service", "status"}
    tools = {b["tool"] for b in emitted[("incident-responder", "ToolDuration")]}
    assert "get_config_drift" in tools or "get_recent_logs" in tools


def test_run_that_ends_in_error_exits_non_zero(tmp_path):
    from incident_responder.lab.converse.backends import ScriptedBackend
    from incident_responder.lab.converse.errors import ConverseError
    from incident_responder.lab.converse.gateway import ConverseGateway

    scenario = str(REPO / "scenarios" / "s3-policy-revoked.yaml")
    # The user's Bedrock endpoint says this account has no access to the model: ModelAuthError -> ERROR.
    denied = ConverseError(
        403, "AccessDeniedException", "You don't have access to the model with the specified model ID."
    )
    with ConverseGateway(ScriptedBackend([denied] * 3)) as bedrock:
        user = {"AWS_ACCESS_KEY_ID": "AKIAUSER", "AWS_SECRET_ACCESS_KEY": "s", "AWS_DEFAULT_REGION": "eu-west-1"}
        out = responder(
            "run",
            scenario,
            "--json",
            "--model",
            "bedrock_converse:global.anthropic.claude-haiku-4-5-20251001-v1:0",
            "--out",
            str(tmp_path / "out"),
            env={**clean_env(tmp_path), **user, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": bedrock.url},
            timeout=180,
        )
    record = json.loads(out.stdout)
    assert record["status"] == "ERROR"
    assert out.returncode == 1
    # Its report says why, from what the run stored: the fix first.
    page = (tmp_path / "out" / record["incident_id"] / "report.html").read_text()
    assert_report(page, "ERROR")
    assert 'class="error"' in page and "Model access" in page


def test_run_of_a_scenario_whose_workload_raises_no_alarm_says_so_and_fails(tmp_path):
    """Defect: `responder run` printed "incident None: NO_ALERT", then a KeyError traceback."""
    scenario = tmp_path / "healthy.yaml"
    scenario.write_text("name: healthy\nfaults: []\n")  # nothing injected: the workload succeeds
    out = responder("run", str(scenario), env=clean_env(tmp_path), timeout=180)
    assert out.returncode == 1 and out.stdout == "" and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert out.stderr.splitlines()[-1] == (
        "responder run: healthy: the workload raised no alarm (3 invocations: 3 succeeded): no incident to follow"
    )


def test_run_refuses_a_model_it_cannot_reach_before_starting_a_lab(tmp_path):
    scenario = str(REPO / "scenarios" / "s3-policy-revoked.yaml")
    out = responder("run", scenario, "--model", "openai:gpt-x", env=clean_env(tmp_path), timeout=60)
    assert out.returncode == 2
    assert "OPENAI_BASE_URL" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize(
    ("status", "healthy", "succeeded"),
    [("REMEDIATED", True, True), ("REMEDIATED", False, False), ("PROPOSAL_FAILED", False, False), (None, False, False)],
)
def test_a_demo_that_does_not_end_remediated_and_healthy_exits_non_zero(status, healthy, succeeded):
    """Defect: a demo ending PROPOSAL_FAILED exited 0. (The lifecycle's PROPOSAL_FAILED end, its report and the
    run's exit status each have their own tests: test_state_machine.py, test_incident_report.py, test_lab_cli.py.)"""
    from incident_responder.lab.demo import demo_succeeded

    assert demo_succeeded(status, healthy) is succeeded


def test_ctrl_c_during_the_demo_stops_everything_quietly(tmp_path):
    """Defect: Ctrl-C during `make demo` (a terminal's SIGINT reaches the whole foreground process group) printed
    the lab's child processes' KeyboardInterrupt tracebacks. The demo stops its children itself: exit 130, no
    traceback, nothing of it left running."""
    import os
    import signal
    import time

    from tests.lab_cli import alive, descendants_of

    # As a terminal runs it: SIGINT at its default (a test runner may have it ignored), its own process group.
    start = (
        "import os, signal, sys\n"
        "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
        f"os.execv(sys.executable, [sys.executable, '-m', 'incident_responder.cli', 'demo', '--out', {str(tmp_path)!r}])\n"
    )
    demo = subprocess.Popen(
        [sys.executable, "-c", start],
        cwd=REPO,
        env=clean_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        # Its fork server and the function URL servers forked from it started, still importing their handlers.
        while len(descendants_of(demo.pid)) < 3 and time.monotonic() < deadline and demo.poll() is None:
            time.sleep(0.05)
        assert len(descendants_of(demo.pid)) >= 3, "the demo started no child process"
        started = descendants_of(demo.pid)
        os.killpg(demo.pid, signal.SIGINT)  # Ctrl-C
        err = demo.communicate(timeout=60)[1]
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
    assert demo.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in started if alive(pid)] == []
