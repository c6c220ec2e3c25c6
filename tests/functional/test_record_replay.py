"""`responder eval --record DIR` then `--replay DIR`: a run against a Converse-speaking model kept one cassette per
scenario, and the same scenarios run again from the cassettes with no model and no credentials at all; a replay that
departs from its cassette fails the run, loudly.

The "model" is a local server speaking Converse (the offline model over the wire) that accepts only requests signed
with the user's key, named by AWS_ENDPOINT_URL_BEDROCK_RUNTIME as a user's own endpoint would be.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from incident_responder.agent.model_catalog import DEFAULT_MODEL
from incident_responder.lab.converse.backends import OfflineBackend
from incident_responder.lab.converse.gateway import ConverseGateway

REPO = Path(__file__).parents[2]
# Two faults, one a person takes over: the investigation talks to the model over two turns and the proposal once (the
# review approves the lookup's own restore without it). One scenario recorded (each costs a lab run); the replay
# adds an edited copy, so cassettes are still looked up per scenario.
ONE = "dns-tcp-connection-limit-and-memory"
SCENARIOS = (ONE,)
USER_KEY, USER_SECRET = "AKIAUSERKEY00000002", "the-users-own-secret"


def _eval(*args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AWS_", "MCP_", "MOTO_", "RESPONDER_", "INCIDENT_", "BEDROCK_", "PRICE_PER_MTOK"))
    }
    return subprocess.run(
        [sys.executable, "-m", "incident_responder.cli", "eval", *args, "--json"],
        env={**clean, "AWS_EC2_METADATA_DISABLED": "true", **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _no_credentials(tmp_path: Path) -> dict[str, str]:
    return {"AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), "AWS_CONFIG_FILE": str(tmp_path / "none")}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The scenarios recorded once against the model: (corpus folder, cassettes, the report, the model's server)."""
    root = tmp_path_factory.mktemp("recorded")
    corpus = root / "corpus"
    corpus.mkdir()
    for name in SCENARIOS:
        shutil.copy(next((REPO / "scenarios").rglob(f"{name}.yaml")), corpus)
    model = ConverseGateway(OfflineBackend(), secrets={USER_KEY: USER_SECRET}, require_signature=True)
    with model:
        out = _eval(
            str(corpus),
            "--model",
            DEFAULT_MODEL,
            "--record",
            str(root / "cassettes"),
            AWS_ACCESS_KEY_ID=USER_KEY,
            AWS_SECRET_ACCESS_KEY=USER_SECRET,
            AWS_REGION="eu-west-3",
            AWS_ENDPOINT_URL_BEDROCK_RUNTIME=model.url,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        yield corpus, root / "cassettes", json.loads(out.stdout), out.stderr, model


@pytest.mark.slow
def test_a_recorded_run_keeps_one_cassette_per_scenario_with_every_call(recorded):
    _, cassettes, report, stderr, model = recorded
    # Said before it started: where the calls go, that they are recorded, and what the run may cost at most.
    first = stderr.splitlines()[0]
    assert first.startswith(f"model: {DEFAULT_MODEL}") and "recording to" in first and "at most $" in first
    assert sorted(p.name for p in cassettes.iterdir()) == sorted(f"{name}.json" for name in SCENARIOS)
    # Every call went to the model signed with the user's key (the server refuses anything else) and is kept.
    assert all(e.signature_valid and e.access_key == USER_KEY for e in model.exchanges)
    kept = [json.loads((cassettes / f"{name}.json").read_text()) for name in SCENARIOS]
    assert sum(len(c["exchanges"]) for c in kept) == len(model.exchanges) == report["summary"]["llm_calls"]
    agents = {row["agent"] for c in kept for row in c["exchanges"]}
    assert agents == {"submit_diagnosis", "submit_proposal"}
    assert all(c["model"] == DEFAULT_MODEL and c["region"] == "eu-west-3" for c in kept)
    # What it spent, from the usage the model reported, at the default model's list prices.
    assert 0 < report["summary"]["spent_usd"] == pytest.approx(report["summary"]["estimated_cost_usd"], abs=1e-3)


EDITED = f"{ONE}-edited"


@pytest.fixture(scope="module")
def replayed(recorded, tmp_path_factory):
    """The recorded scenarios replayed with no model and no credentials, in one lab beside a copy of the first
    whose cassette was edited: the investigation's first answer now calls its first tool with other arguments,
    so what the code sends next is not what was recorded. (the replay's report, its stderr, model calls before)"""
    corpus, cassettes, _, _, model = recorded
    root = tmp_path_factory.mktemp("replayed")
    shutil.copytree(corpus, root / "corpus")
    shutil.copytree(cassettes, root / "cassettes")
    scenario = (corpus / f"{ONE}.yaml").read_text().replace(f"name: {ONE}", f"name: {EDITED}")
    (root / "corpus" / f"{EDITED}.yaml").write_text(scenario)
    cassette = json.loads((cassettes / f"{ONE}.json").read_text())
    blocks = cassette["exchanges"][0]["response"]["output"]["message"]["content"]
    use = next(b["toolUse"] for b in blocks if "toolUse" in b)
    use["input"] = {**use["input"], "lambda_name": "another-function"}
    (root / "cassettes" / f"{EDITED}.json").write_text(json.dumps(cassette))
    calls_before = len(model.exchanges)
    out = _eval(str(root / "corpus"), "--replay", str(root / "cassettes"), **_no_credentials(root))
    yield out, calls_before


@pytest.mark.slow
def test_the_replay_runs_the_same_scenarios_with_no_model_and_no_credentials(recorded, replayed):
    _, _, recorded_report, _, model = recorded
    out, calls_before = replayed
    assert out.returncode == 1, out.stderr[-3000:]  # the edited cassette's scenario fails the run, and only it
    assert "replayed from" in out.stderr.splitlines()[0]
    assert len(model.exchanges) == calls_before  # the model was never asked
    replayed_scores = {s["name"]: s for s in json.loads(out.stdout)["scenarios"]}
    assert sorted(replayed_scores) == sorted([*SCENARIOS, EDITED])
    assert [name for name, s in replayed_scores.items() if not s["passed"]] == [EDITED]
    for was in recorded_report["scenarios"]:
        now = replayed_scores[was["name"]]
        assert now["passed"], now["failures"]
        for key in ("status", "fault_types", "actions", "llm_calls", "tool_calls", "input_tokens", "output_tokens"):
            assert now[key] == was[key], key


@pytest.mark.slow
def test_a_replay_that_departs_from_its_cassette_fails_loudly(replayed):
    out, _ = replayed
    (score,) = [s for s in json.loads(out.stdout)["scenarios"] if s["name"] == EDITED]
    assert not score["passed"] and score["status"] == "ERROR"
    departures = [f for f in score["failures"] if f.startswith("departed from the cassette")]
    # Message 4: the incident, the first reads made before the first turn (a turn of calls and their answers), the
    # first turn (edited), then the answers the code sent back, which were not what was recorded.
    assert "submit_diagnosis call 2 differs at message 4" in departures[0]
    assert "never made" in departures[-1]  # the proposal's call, left unused
    assert "departed from the cassette" in out.stderr  # printed as the scenario ends


def test_a_replay_without_a_cassette_for_every_scenario_stops_before_any_lab(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(REPO / "scenarios" / "timeout-too-low.yaml", corpus)
    (tmp_path / "cassettes").mkdir()
    out = _eval(str(corpus), "--replay", str(tmp_path / "cassettes"))
    assert out.returncode == 2
    assert "timeout-too-low.json: no cassette for this scenario (record it with --record)" in out.stderr
    assert "Traceback" not in out.stderr


RECORDED = sorted(p for p in (REPO / "cassettes").glob("*") if p.is_dir() and any(p.glob("*.json")))


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("cassettes", RECORDED or [None], ids=[p.name for p in RECORDED] or ["none"])
def test_the_models_recorded_here_still_replay_on_the_corpus(cassettes, tmp_path):
    """What `make eval-bedrock` recorded under cassettes/<model>/, replayed on the scenarios it holds: a change to a
    prompt, a tool or the loop that a recorded model would have answered differently fails here."""
    if cassettes is None:
        pytest.skip("no cassettes recorded here (make eval-bedrock records them under cassettes/<model id>/)")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for cassette in cassettes.glob("*.json"):
        scenario = REPO / "scenarios" / f"{cassette.stem}.yaml"
        if scenario.exists():
            shutil.copy(scenario, corpus)
    out = _eval(str(corpus), "--replay", str(cassettes), **_no_credentials(tmp_path))
    assert out.returncode == 0, out.stderr[-5000:]
