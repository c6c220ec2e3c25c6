"""Tokens per incident beside accuracy, so that a saving can never hide a loss.

    token_summary(report.scenarios)   # or the "scenarios" of ``responder eval --json``

gives, over a corpus run, the median, mean and p95 of the tokens each incident cost (every agent's model
calls: input and output), the same per agent (investigation, proposal, review), and how many scenarios
passed. Light on purpose: a benchmark script can call it on a saved report without starting a lab.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

# The agents that call a model for an incident, in lifecycle order (the keys of metrics["tokens_by_agent"]).
AGENTS = ("investigation", "proposal", "review")


# What a model call used, as each step's metrics and each scored scenario keep it: what a price turns into a cost.
USAGE = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def usage(row: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """``row``'s :data:`USAGE`, in that order (0 for what it lacks): the arguments of ``Prices.cost``."""
    return tuple(int(row.get(k) or 0) for k in USAGE)  # type: ignore[return-value]


def percentile(values: Iterable[int] | Iterable[float], q: float) -> Any:
    """The value at quantile ``q`` (nearest rank) of ``values``; None when there are none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))] if ordered else None


def _stats(values: list[int] | list[float], digits: int | None = None) -> dict[str, float | int | None]:
    """Median, mean and p95; ``digits``: each rounded so (the mean to one digit otherwise)."""
    if not values:
        return {"median": None, "mean": None, "p95": None}
    keep = (lambda v: v) if digits is None else (lambda v: round(v, digits))
    return {
        "median": keep(statistics.median(values)),
        "mean": round(statistics.mean(values), 1 if digits is None else digits),
        "p95": keep(percentile(values, 0.95)),
    }


def token_summary(records: Iterable[BaseModel | Mapping[str, Any]]) -> dict[str, Any]:
    """Tokens per incident (median, mean, p95), per agent, and accuracy, for scored scenarios.

    ``records``: :class:`incident_responder.lab.evaluation.ScenarioScore` objects, or their JSON (each with
    ``passed``, ``total_tokens`` and ``tokens_by_agent``). An agent that did not run for an incident (no
    review when nothing was proposed) counts 0 for it, as it cost nothing.
    """
    rows = [r.model_dump() if isinstance(r, BaseModel) else dict(r) for r in records]
    passed = sum(bool(row.get("passed")) for row in rows)
    return {
        "incidents": len(rows),
        "tokens_per_incident": _stats([int(row.get("total_tokens") or 0) for row in rows]),
        "tokens_per_agent": {
            agent: _stats([int((row.get("tokens_by_agent") or {}).get(agent) or 0) for row in rows]) for agent in AGENTS
        },
        "accuracy": {
            "passed": passed,
            "total": len(rows),
            "ratio": round(passed / len(rows), 3) if rows else None,
        },
    }


def cost_summary(records: Iterable[BaseModel | Mapping[str, Any]], prices: Any) -> dict[str, Any]:
    """USD per incident at ``prices`` (:class:`incident_responder.agent.model_catalog.Prices`), with the prompt cache
    as the model reported it, and without (every input token at the input price): median, mean, p95 and the total;
    and the share of input tokens read from the cache."""
    rows = [r.model_dump() if isinstance(r, BaseModel) else dict(r) for r in records]
    cached = [prices.cost(*usage(row)) for row in rows]
    uncached = [prices.cost(*usage(row)[:2]) for row in rows]
    inputs = sum(usage(row)[0] for row in rows)

    def stats(values: list[float]) -> dict[str, float | None]:
        return {**_stats(values, digits=5), "total": round(sum(values), 4)}

    return {
        "incidents": len(rows),
        "with_caching": stats(cached),
        "without_caching": stats(uncached),
        "cache_read_share": round(sum(usage(row)[2] for row in rows) / inputs, 3) if inputs else None,
        "cache_write_share": round(sum(usage(row)[3] for row in rows) / inputs, 3) if inputs else None,
    }


def by_agent(records: Iterable[BaseModel | Mapping[str, Any]], prices: Any) -> dict[str, dict[str, Any]]:
    """Per agent, over scored scenarios: tokens per incident (median, mean), model turns (mean) and cost per incident
    at ``prices`` with the prompt cache as reported (median, mean), and the share of its input read from the cache.
    An agent that took no model turn for an incident counts 0 for it."""
    rows = [r.model_dump() if isinstance(r, BaseModel) else dict(r) for r in records]
    found: dict[str, dict[str, Any]] = {}
    for agent in AGENTS:
        used = [usage((row.get("usage_by_agent") or {}).get(agent) or {}) for row in rows]
        costs = [prices.cost(*u) for u in used]
        inputs = sum(u[0] for u in used)
        tokens = _stats([int((row.get("tokens_by_agent") or {}).get(agent) or 0) for row in rows])
        turns = [int((row.get("turns_by_agent") or {}).get(agent) or 0) for row in rows]
        found[agent] = {
            "tokens": {"median": tokens["median"], "mean": tokens["mean"]},
            "turns_mean": round(statistics.mean(turns), 2) if turns else None,
            "cost_usd": {k: v for k, v in _stats(costs, digits=5).items() if k != "p95"},
            "cache_read_share": round(sum(u[2] for u in used) / inputs, 3) if inputs else None,
        }
    return found


def by_tool(records: Iterable[BaseModel | Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per tool, over scored scenarios: its calls per incident and the tokens its answers put before the model per
    incident (estimated at four characters a token), both means, the heaviest first."""
    rows = [r.model_dump() if isinstance(r, BaseModel) else dict(r) for r in records]
    calls: dict[str, int] = {}
    chars: dict[str, int] = {}
    for row in rows:
        for tool, seen in (row.get("tool_output_by_tool") or {}).items():
            calls[tool] = calls.get(tool, 0) + int(seen.get("calls") or 0)
            chars[tool] = chars.get(tool, 0) + int(seen.get("chars") or 0)
    if not rows:
        return {}
    return {
        tool: {"calls": round(calls[tool] / len(rows), 2), "tokens": round(chars[tool] / 4 / len(rows))}
        for tool in sorted(calls, key=lambda t: -chars[t])
    }
