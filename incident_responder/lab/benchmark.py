"""The corpus as a benchmark of Lambda root-cause analysis: a model's scores kept per model
(``bench/benchmark/<model>.json``), scored on each dimension a scenario expects, and the failure catalogue's
coverage computed from the scenarios that pass.

``scripts/benchmark.py`` runs a model over the corpus (``make eval-model MODEL=...``) and renders
``docs/benchmark.md`` from what is kept here; ``scripts/catalogue.py`` reads the coverage for the failure
catalogue page.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from incident_responder.catalogue.failure_mode import FailureMode
from incident_responder.catalogue.queries import FAILURE_MODES
from incident_responder.lab.evaluation import EvalReport, expected_status, load_corpus
from incident_responder.lab.scenario import Scenario

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "benchmark"
CORPUS = REPO / "scenarios"
# What a kept score holds: what is judged, and what it cost (the rest of a score is for the eval's own output).
KEPT = (
    "name",
    "passed",
    "status",
    "fault_types",
    "failure_modes",
    "actions",
    "mitigated",
    "grounded_ratio",
    "total_tokens",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "latency_ms",
    "failures",
)


def slug(model: str) -> str:
    """The file name a model's scores are kept under: ``bedrock_converse:global.anthropic...`` -> safe text."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-") or "offline"


def keep(report: EvalReport, *, model: str, priced_as: str | None, date: str) -> dict[str, Any]:
    """What is kept of one model's run: the model, when, the prices its cost is counted at, and each score."""
    return {
        "model": model,
        "date": date,
        "priced_as": priced_as,
        "scenarios": [{k: v for k, v in s.model_dump(mode="json").items() if k in KEPT} for s in report.scenarios],
    }


def write(results: dict[str, Any], directory: Path = RESULTS) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{slug(results['model'])}.json"
    path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def read_all(directory: Path = RESULTS) -> list[dict[str, Any]]:
    """Every model's kept scores, the offline model's first."""
    kept = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.json"))]
    return sorted(kept, key=lambda r: (r["model"] != "offline", r["model"]))


def corpus(directory: Path = CORPUS) -> dict[str, Scenario]:
    return {scenario.name: scenario for _, scenario in load_corpus(directory)}


@dataclass(frozen=True)
class Row:
    """One model's line in the results table: each dimension as (right, out of)."""

    model: str
    date: str
    passed: tuple[int, int]
    status: tuple[int, int]
    fault_types: tuple[int, int]
    failure_modes: tuple[int, int]
    actions: tuple[int, int]
    mitigated: tuple[int, int]
    grounded: float | None
    tokens_median: int | None
    cost_median: float | None
    latency_p50_ms: int | None
    priced_as: str | None


def _share(flags: Iterable[bool]) -> tuple[int, int]:
    values = list(flags)
    return sum(values), len(values)


def row(results: dict[str, Any], scenarios: dict[str, Scenario]) -> Row:
    """Score one model's kept run against the corpus's expectations (a scenario no longer in the corpus is left
    out; one the run did not reach counts as failed)."""
    from incident_responder.agent.model_catalog import prices

    by_name = {s["name"]: s for s in results["scenarios"]}
    judged = [(scenarios[name], by_name.get(name)) for name in scenarios]
    ran = [(sc, s) for sc, s in judged if s is not None]

    def exact(field: str, expected) -> Iterable[bool]:
        return (s is not None and sorted(s[field]) == sorted(str(v) for v in expected(sc)) for sc, s in judged)

    try:
        price = prices(results["priced_as"], environ={}) if results.get("priced_as") else None
    except (KeyError, ValueError):  # a model spec it cannot read: no cost column
        price = None
    costs = [
        price.cost(s["input_tokens"], s["output_tokens"], s["cache_read_tokens"], s["cache_write_tokens"])
        for _, s in ran
        if price is not None
    ]
    tokens = [s["total_tokens"] for _, s in ran]
    latencies = [s["latency_ms"] for _, s in ran]
    grounded = [s["grounded_ratio"] for _, s in ran if s["grounded_ratio"] is not None]
    expecting_modes = [(sc, s) for sc, s in judged if sc.expect.failure_modes is not None]
    return Row(
        model=results["model"],
        date=results["date"],
        passed=_share(s is not None and s["passed"] for _, s in judged),
        status=_share(s is not None and s["status"] == expected_status(sc, "auto") for sc, s in judged),
        fault_types=_share(exact("fault_types", lambda sc: sc.expect.fault_types)),
        failure_modes=_share(
            s is not None and sorted(s["failure_modes"]) == sorted(set(sc.expect.failure_modes or []))
            for sc, s in expecting_modes
        ),
        actions=_share(exact("actions", lambda sc: set(sc.expect.actions))),
        mitigated=_share(
            s is not None and s["mitigated"] is True for sc, s in judged if sc.expect.status == "REMEDIATED"
        ),
        grounded=round(statistics.mean(grounded), 3) if grounded else None,
        tokens_median=int(statistics.median(tokens)) if tokens else None,
        cost_median=round(statistics.median(costs), 4) if costs else None,
        latency_p50_ms=int(statistics.median(latencies)) if latencies else None,
        priced_as=results.get("priced_as"),
    )


@dataclass(frozen=True)
class Coverage:
    """One catalogue entry: what the responder does with it, and the scenarios that expect it."""

    mode: FailureMode
    scenarios: tuple[str, ...]
    passing: tuple[str, ...]

    @property
    def diagnosed(self) -> bool:
        """Diagnosed: the responder names it, and a scenario expecting it passes."""
        return self.mode.responder != "not_yet" and bool(self.passing)


def coverage(results: dict[str, Any] | None, scenarios: dict[str, Scenario]) -> list[Coverage]:
    """Every catalogue entry with the corpus's scenarios that expect it and those of them that passed in
    ``results`` (none kept: none passed)."""
    passed = {s["name"] for s in (results or {}).get("scenarios", []) if s["passed"]}
    found = []
    for mode in FAILURE_MODES:
        names = tuple(sorted(n for n, sc in scenarios.items() if mode.id in (sc.expect.failure_modes or [])))
        found.append(Coverage(mode, names, tuple(n for n in names if n in passed)))
    return found


def offline_results(directory: Path = RESULTS) -> dict[str, Any] | None:
    path = directory / "offline.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
