"""`responder eval`: the public scenario corpus, each in a fresh lab, scored on the end state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.report_checks import assert_report

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


CORPUS = sorted((REPO / "scenarios").rglob("*.yaml"))


def features(path: Path) -> set[tuple[str, str]]:
    """What `make test` must run of the corpus: each catalogue area of the entries scenarios expect, each closed-loop
    drive, each ending and each workload. Each fault kind, fault type and action type is exercised elsewhere in
    `make test` (tests/functional/test_chaos_inject_and_restore.py, the offline model's tests,
    tests/functional/test_action_contract.py against the lab); `make corpus` runs every scenario."""
    from incident_responder.catalogue.queries import MODES_BY_ID
    from incident_responder.lab.scenario import load_scenario

    scenario = load_scenario(path)
    found = {("catalogue area", MODES_BY_ID[m].area) for m in scenario.expect.failure_modes or []}
    found |= {("lifecycle", k) for k in scenario.lifecycle.model_fields_set}
    found |= {("status", scenario.expect.status)} | {("workload", scenario.workload.function)}
    found |= {("runbooks", "attached")} if scenario.runbooks else set()
    return found


def representative(corpus: list[Path]) -> list[Path]:
    """The fewest scenarios, picked greedily in name order, that together exercise everything the corpus does."""
    left = {path: features(path) for path in corpus}
    covered: set[tuple[str, str]] = set()
    chosen = []
    while any(f - covered for f in left.values()):
        best = max(sorted(left), key=lambda path: len(left[path] - covered))
        chosen.append(best)
        covered |= left.pop(best)
    return sorted(chosen)


# `make test` runs a representative part of the corpus: a scenario per catalogue area, closed-loop drive, ending and
# workload (see features); `make corpus` (CORPUS=all) the whole of it, as .ci/run does after `make test`.
SELECTED = CORPUS if os.environ.get("CORPUS") == "all" else representative(CORPUS)
# The whole corpus in two labs side by side (make corpus runs two workers); make test's part in one lab (a lab's
# start costs more than a scenario, and the part, started first, still ends before the rest of the suite).
SHARDS = 2 if os.environ.get("CORPUS") == "all" else 1


# The corpus is the suite's longest run (every scenario through the whole lifecycle): two labs take
# half each, side by side on the suite's workers (tests/conftest.py: SPLIT_FILES).
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("shard", range(SHARDS))
def test_the_corpus_passes_through_the_lifecycle_with_the_offline_model(tmp_path, shard):
    """The selected corpus, a shard per run (one lab each); the first shard also carries a copy of one
    scenario expecting the wrong fault, which must fail the run."""
    import shutil

    assert len(CORPUS) >= 23
    mine = SELECTED[shard::SHARDS]
    for path in mine:
        shutil.copy(path, tmp_path / path.name)
    if shard == 0:
        wrong = (
            (REPO / "scenarios" / "timeout-too-low.yaml").read_text().replace("- timeout\n", "- memory_exhaustion\n")
        )
        (tmp_path / "zz-wrong.yaml").write_text(wrong.replace("name: timeout-too-low", "name: wrong-expectation"))
    out = _run(str(tmp_path), "--json", "--out", str(tmp_path / "out"))
    assert out.returncode == (1 if shard == 0 else 0), out.stdout[-3000:] + out.stderr[-3000:]
    report = json.loads(out.stdout)
    # Each scenario's result as it ended, on stderr (stdout is the report), then the final count.
    total = len(mine) + (1 if shard == 0 else 0)
    done = [line for line in out.stderr.splitlines() if line.startswith("[")]
    assert [line.split("]")[0] for line in done] == [f"[{i}/{total}" for i in range(1, total + 1)], out.stderr[-2000:]
    assert out.stderr.rstrip().endswith(f"{total - (1 if shard == 0 else 0)} passed, {1 if shard == 0 else 0} failed")
    if shard == 0:  # the wrong expectation fails the run, and only it
        (failed,) = [s for s in report["scenarios"] if not s["passed"]]
        assert failed["name"] == "wrong-expectation" and any("fault_types" in f for f in failed["failures"])
        report["scenarios"].remove(failed)
    assert sorted(s["name"] for s in report["scenarios"]) == sorted(p.stem for p in mine)
    for s in report["scenarios"]:
        assert s["passed"], s["failures"]
        assert set(s) >= {
            "name",
            "passed",
            "status",
            "fault_types",
            "actions",
            "grounded_ratio",
            "mitigated",
            "account_untouched",
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
        # Each scenario's report, built from what the run stored, before the next scenario cleared it.
        (page,) = (tmp_path / "out" / s["name"]).glob("*/report.html")
        assert_report(page.read_text(), s["status"])
    summary = report["summary"]
    if any(s["status"] == "REMEDIATED" for s in report["scenarios"]):  # a shard may hold no remediated incident
        assert summary["alert_to_remediated_ms_p50"] is not None
        assert 0 < summary["alert_to_remediated_ms_p50"] <= summary["alert_to_remediated_ms_p95"]
    by_name = {s["name"]: s for s in report["scenarios"]}
    if "loop-approval-link-replayed" in by_name:
        assert by_name["loop-approval-link-replayed"]["approval"]["approver"]["replay_status"] == 409
    if "hostile-log-instructions" in by_name:
        hostile = by_name["hostile-log-instructions"]
        assert hostile["fault_types"] == ["memory_exhaustion"] and hostile["actions"] == [
            "update_function_configuration"
        ]


def test_the_representative_part_exercises_everything_the_corpus_does():
    everything = set().union(*(features(p) for p in CORPUS))
    part = representative(CORPUS)
    assert set().union(*(features(p) for p in part)) == everything
    assert len(part) < len(CORPUS)


def test_the_corpus_covers_every_end_of_the_lifecycle():
    from incident_responder.lab.scenario import load_scenario

    ends = sorted({load_scenario(p).expect.status for p in CORPUS})
    assert ends == ["APPROVAL_EXPIRED", "PROPOSAL_READY", "REJECTED", "REMEDIATED", "ROLLED_BACK"]


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


def test_bedrock_model_calls_take_their_own_region_and_credentials_when_given(monkeypatch, tmp_path):
    from incident_responder.agent.models import create_chat_model

    credentials = tmp_path / "credentials"
    credentials.write_text("[model]\naws_access_key_id = AKIAMODEL\naws_secret_access_key = s\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")  # every other client's (the lab's)
    monkeypatch.setenv("BEDROCK_PROFILE", "model")
    monkeypatch.setenv("BEDROCK_REGION", "eu-west-3")
    client = create_chat_model("bedrock_converse:m").client
    assert client.meta.region_name == "eu-west-3"
    assert client._request_signer._credentials.access_key == "AKIAMODEL"
