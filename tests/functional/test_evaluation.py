"""`responder eval`: the public scenario corpus, each in a fresh lab, scored on the end state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MCP_", "MOTO_", "RESPONDER_", "INCIDENT_"))
    }
    return subprocess.run(
        [sys.executable, "-m", "incident_responder.cli", "eval", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.timeout(360)  # the slowest test: one lab, every scenario of the corpus
def test_the_whole_corpus_passes_with_the_offline_model_and_a_wrong_expectation_fails_the_run(tmp_path):
    """One eval run (one lab): the public corpus, plus a copy of one scenario expecting the wrong fault."""
    import shutil

    for path in (REPO / "scenarios").glob("*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    wrong = (REPO / "scenarios" / "timeout-too-low.yaml").read_text().replace("- timeout\n", "- memory_exhaustion\n")
    (tmp_path / "zz-wrong.yaml").write_text(wrong.replace("name: timeout-too-low", "name: wrong-expectation"))
    out = _run(str(tmp_path), "--json")
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-3000:]  # the wrong expectation fails the run
    report = json.loads(out.stdout)
    (failed,) = [s for s in report["scenarios"] if not s["passed"]]
    assert failed["name"] == "wrong-expectation" and any("fault_types" in f for f in failed["failures"])
    report["scenarios"].remove(failed)
    names = {s["name"] for s in report["scenarios"]}
    assert len(names) == len(list((REPO / "scenarios").glob("*.yaml"))) >= 23
    for s in report["scenarios"]:
        assert set(s) >= {
            "name",
            "passed",
            "status",
            "fault_types",
            "actions",
            "grounded_ratio",
            "mitigated",
            "tool_calls",
            "llm_calls",
            "total_tokens",
            "latency_ms",
            "failures",
        }
        assert s["grounded_ratio"] == 1.0 and s["rejected_actions"] == 0
        # Scored on the end state the lifecycle reached: remediated, or the account exactly as the alert found it.
        if s["status"] == "REMEDIATED":
            assert s["mitigated"] is True and s["account_untouched"] is None
        else:
            assert s["mitigated"] is None and s["account_untouched"] is True, s
    statuses = report["summary"]["final_statuses"]
    assert statuses["REMEDIATED"] >= 15 and statuses["ROLLED_BACK"] == 2 and statuses["PROPOSAL_READY"] == 2
    assert (statuses["REJECTED"], statuses["APPROVAL_EXPIRED"]) == (1, 1)
    assert 0 < report["summary"]["alert_to_remediated_ms_p50"] <= report["summary"]["alert_to_remediated_ms_p95"]
    replayed = next(s for s in report["scenarios"] if s["name"] == "loop-approval-link-replayed")
    assert replayed["approval"]["approver"]["replay_status"] == 409
    hostile = next(s for s in report["scenarios"] if s["name"] == "hostile-log-instructions")
    assert hostile["fault_types"] == ["memory_exhaustion"] and hostile["actions"] == ["update_function_configuration"]


def test_a_bad_scenario_file_is_named_with_its_field(tmp_path):
    (tmp_path / "a-good.yaml").write_text((REPO / "scenarios" / "timeout-too-low.yaml").read_text())
    (tmp_path / "b-bad.yaml").write_text("name: bad\nfaults:\n  - kind: throttle\n    reserved_concurrency: 3\n")
    out = _run(str(tmp_path))
    assert out.returncode == 2
    assert "b-bad.yaml" in out.stderr and "reserved_concurrency" in out.stderr and "Traceback" not in out.stderr


def test_eval_against_bedrock_fails_fast_without_credentials(tmp_path):
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MCP_", "MOTO_", "RESPONDER_", "INCIDENT_"))
    }
    env.update(
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "incident_responder.cli",
            "eval",
            str(REPO / "scenarios"),
            "--model",
            "bedrock_converse:some-model",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    assert "no AWS credentials for Bedrock" in out.stderr and "Traceback" not in out.stderr


def test_bedrock_clients_come_from_the_factory_when_set():
    import boto3

    from incident_responder.agent.models import create_chat_model, set_bedrock_client_factory

    client = boto3.client("bedrock-runtime", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")
    set_bedrock_client_factory(lambda: client)
    try:
        assert create_chat_model("bedrock_converse:m").client is client
    finally:
        set_bedrock_client_factory(None)
