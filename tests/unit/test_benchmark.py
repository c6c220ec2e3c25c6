"""The corpus as a benchmark (docs/benchmark.md): a model's kept scores judged on each dimension a scenario
expects, the catalogue's coverage from the scenarios that pass, and the page rendered from what is kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from incident_responder.lab import benchmark
from incident_responder.lab.scenario import Scenario
from tests.scripts_by_path import load_script

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def script():
    return load_script("benchmark", module_name="benchmark_script")


def _scenario(name: str, **expect) -> Scenario:
    return Scenario.model_validate({"name": name, "expect": expect})


SCENARIOS = {
    "fixed": _scenario(
        "fixed",
        status="REMEDIATED",
        fault_types=["handler_misconfigured"],
        failure_modes=["handler-not-found"],
        actions=["restore_handler"],
    ),
    "handed": _scenario("handed", fault_types=["recursive_loop"], failure_modes=["recursive-loop-stopped"], actions=[]),
    "unreached": _scenario("unreached", fault_types=["timeout"], actions=["update_function_configuration"]),
}


def _kept(name: str, **fields) -> dict:
    score = {
        "name": name,
        "passed": True,
        "status": "PROPOSAL_READY",
        "fault_types": [],
        "failure_modes": [],
        "actions": [],
        "mitigated": None,
        "grounded_ratio": 1.0,
        "total_tokens": 1000,
        "input_tokens": 900,
        "output_tokens": 100,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "latency_ms": 2000,
        "failures": [],
    }
    return score | fields


RESULTS = {
    "model": "offline",
    "date": "2026-11-27",
    "priced_as": "bedrock_converse:global.anthropic.claude-haiku-4-5-20251001-v1:0",
    "scenarios": [
        _kept(
            "fixed",
            status="REMEDIATED",
            fault_types=["handler_misconfigured"],
            failure_modes=["handler-not-found"],
            actions=["restore_handler"],
            mitigated=True,
        ),
        # The right fault, the wrong catalogue entry: failed, and only that dimension is wrong.
        _kept("handed", passed=False, fault_types=["recursive_loop"], failure_modes=["application-error"]),
        _kept("gone", total_tokens=10**6),  # no longer in the corpus: left out
    ],
}


def test_each_dimension_is_judged_against_the_scenarios_expectations():
    row = benchmark.row(RESULTS, SCENARIOS)
    assert row.passed == (1, 3)  # "unreached" was not run: failed
    assert row.status == (2, 3) and row.fault_types == (2, 3) and row.actions == (2, 3)
    assert row.failure_modes == (1, 2)  # only the scenarios that expect entries
    assert row.mitigated == (1, 1)
    assert row.tokens_median == 1000 and row.latency_p50_ms == 2000
    assert row.cost_median is not None and 0 < row.cost_median < 0.01


def test_an_entry_counts_as_diagnosed_only_by_a_passing_scenario():
    found = {c.mode.id: c for c in benchmark.coverage(RESULTS, SCENARIOS)}
    assert found["handler-not-found"].diagnosed and found["handler-not-found"].passing == ("fixed",)
    assert found["recursive-loop-stopped"].scenarios == ("handed",) and not found["recursive-loop-stopped"].diagnosed
    assert not any(c.diagnosed for c in benchmark.coverage(None, SCENARIOS))


def test_the_committed_page_is_what_the_kept_scores_render(script):
    assert script.main(["--check"]) == 0, "run `python scripts/benchmark.py --render`"


def test_a_stale_page_is_refused_with_what_to_run(script, tmp_path, monkeypatch, capsys):
    page = tmp_path / "benchmark.md"
    page.write_text("# hand-written\n\n" + script.BEGIN + "\nold tables\n", encoding="utf-8")
    monkeypatch.setattr(script, "PAGE", page)
    assert script.main(["--check"]) == 1
    assert "python scripts/benchmark.py --render" in capsys.readouterr().err
    assert script.main(["--render"]) == 0 and script.main(["--check"]) == 0
    assert page.read_text(encoding="utf-8").startswith("# hand-written\n")  # the hand-written part kept


def test_kept_scores_are_named_after_their_model():
    assert benchmark.slug("bedrock_converse:global.anthropic.claude-haiku-4-5-20251001-v1:0") == (
        "bedrock_converse-global.anthropic.claude-haiku-4-5-20251001-v1-0"
    )
    assert benchmark.slug("offline") == "offline"


def test_the_responders_aws_calls_are_summarised_per_incident():
    from types import SimpleNamespace

    from incident_responder.lab.api_calls import aws_call_summary

    def scored(status, calls, by_api):
        return SimpleNamespace(status=status, aws_calls=calls, aws_calls_by_api=by_api, aws_calls_by_function={})

    summary = aws_call_summary(
        [
            scored("REMEDIATED", 160, {"iam:GetRolePolicy": 24, "lambda:GetFunctionConfiguration": 12}),
            scored("REMEDIATED", 120, {"iam:GetRolePolicy": 16}),
            scored("PROPOSAL_READY", 40, {"lambda:GetFunctionConfiguration": 4}),
            scored("NO_ALERT", 0, {}),  # no incident: not one of them
            scored("REMEDIATED", None, {}),  # not counted
        ]
    )
    assert summary["incidents"] == 3 and summary["median"] == 120 and summary["max"] == 160
    assert summary["remediated_median"] == 140
    assert summary["by_api_per_incident"] == {"iam:GetRolePolicy": 13.3, "lambda:GetFunctionConfiguration": 5.3}


def test_spend_is_told_per_agent_per_tool_and_per_function():
    from incident_responder.agent.model_catalog import LIST_PRICES, base_model_id
    from incident_responder.lab.tokens import by_agent, by_tool

    prices = LIST_PRICES[base_model_id("global.anthropic.claude-haiku-4-5-20251001-v1:0")]
    usage = {"input_tokens": 6000, "output_tokens": 400, "cache_read_tokens": 4000, "cache_write_tokens": 0}
    rows = [
        {
            "tokens_by_agent": {"investigation": 6400, "proposal": 0, "review": 0},
            "turns_by_agent": {"investigation": 1, "proposal": 0, "review": 0},
            "usage_by_agent": {"investigation": usage, "proposal": {}, "review": {}},
            "tool_output_by_tool": {
                "get_recent_logs": {"calls": 1, "chars": 4000},
                "get_config_drift": {"calls": 2, "chars": 800},
            },
        },
        {
            "tokens_by_agent": {"investigation": 10000, "proposal": 3000, "review": 0},
            "turns_by_agent": {"investigation": 2, "proposal": 1, "review": 0},
            "usage_by_agent": {
                "investigation": {"input_tokens": 9500, "output_tokens": 500},
                "proposal": {"input_tokens": 2900, "output_tokens": 100},
            },
            "tool_output_by_tool": {"get_recent_logs": {"calls": 1, "chars": 2000}},
        },
    ]
    agents = by_agent(rows, prices)
    assert agents["investigation"]["tokens"] == {"median": 8200.0, "mean": 8200.0}
    assert agents["investigation"]["turns_mean"] == 1.5 and agents["review"]["turns_mean"] == 0
    # 2,000 at the input price, 4,000 read from the cache at a tenth of it, 400 out: $0.0024 + $0.0004.
    assert agents["investigation"]["cost_usd"]["median"] == pytest.approx((0.0044 + 0.012) / 2, abs=1e-5)
    assert agents["investigation"]["cache_read_share"] == round(4000 / 15500, 3)
    assert agents["review"]["cost_usd"]["median"] == 0 and agents["review"]["cache_read_share"] is None
    tools = by_tool(rows)
    assert list(tools) == ["get_recent_logs", "get_config_drift"]  # the heaviest first
    assert tools["get_recent_logs"] == {"calls": 1.0, "tokens": 750} and tools["get_config_drift"]["calls"] == 1.0
    bench = load_script("bench", module_name="bench_script")
    corpus = {
        "by_agent": agents,
        "by_tool": tools,
        "aws_calls_per_incident": {"by_function_per_incident": {"DiagnosticsMcpFunction": 33.5}},
    }
    table = "\n".join(bench.spend_rows(corpus))
    assert "| investigation | 8,200, 8,200 | 1.5 |" in table and "| `get_recent_logs` | 1 | 750 |" in table
    assert "| DiagnosticsMcpFunction | 33.5 |" in table
    assert bench.spend_rows({}) == ["(no spend per agent and tool: run `make bench`)"]
