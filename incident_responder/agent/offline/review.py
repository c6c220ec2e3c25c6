"""The review policy: look each action's fault up again, approve only an action the lookup would make
itself, reject one that changes nothing (already at the baseline), and leave anything else to a person."""

from __future__ import annotations

import json
from typing import Any

from incident_responder.actions.equality import approval_of, key_pointer, normalized
from incident_responder.actions.registry import LOOKUP_FOR_FAULT, NO_DRIFT
from incident_responder.agent.offline.observations import Observations
from incident_responder.agent.offline.proposal import next_remediation_tools
from incident_responder.agent.protocol import TOOL_ERROR_PREFIX


def next_review_tool(obs: Observations, actions: list[dict[str, Any]], available: set[str]) -> str | None:
    return next(iter(next_review_tools(obs, actions, available)), None)


def next_review_tools(obs: Observations, actions: list[dict[str, Any]], available: set[str]) -> list[str]:
    """The lookups of every proposed action's fault, all in one turn."""
    return next_remediation_tools(obs, {"fault_types": [a.get("fault_type") for a in actions]}, available)


def _point(tool: str, field: str, value: Any, interpretation: str) -> dict[str, Any]:
    return {"tool": tool, "field": field, "value": str(value), "interpretation": interpretation}


def judge_action(obs: Observations, action: dict[str, Any]) -> dict[str, Any]:
    """One verdict, as a careful reviewer reaches it from the lookup for the action's fault."""
    order, fault = action.get("execution_order"), action.get("fault_type")

    def verdict(kind: str, reason: str, *evidence: dict[str, Any]) -> dict[str, Any]:
        return {"execution_order": order, "verdict": kind, "reasons": [reason], "evidence": list(evidence)}

    if not isinstance(fault, str) or (tool := LOOKUP_FOR_FAULT.get(fault)) is None:
        return verdict("reject", f"{fault} has no automated remedy")
    if tool in obs.failed or tool not in obs.results:
        error = obs.failed.get(tool, "not available").removeprefix(TOOL_ERROR_PREFIX)
        return verdict("needs_human", f"the action cannot be checked: {error[:300]}")
    result = obs.results[tool]
    if result.get("error"):
        return verdict(
            "needs_human",
            f"{tool} reports an error, so the action cannot be checked: {result['error'][:200]}",
            _point(tool, "error", result["error"][:80], "the lookup failed"),
        )
    ready = [(i, a) for i, a in enumerate(result.get("actions") or []) if a.get("fault_type") == fault]
    if not ready and result.get("drifted"):
        return verdict(
            "needs_human",
            f"{tool} shows drift from the baseline but no restore for it",
            _point(tool, "drifted", "true", "the configuration differs from the baseline"),
        )
    if not ready:
        field, meaning = NO_DRIFT[fault]
        value = result.get(field)
        shown = "null" if value is None else json.dumps(value) if isinstance(value, bool) else str(value)
        return verdict("reject", f"no-op: already at the baseline ({meaning})", _point(tool, field, shown, meaning))
    approved = approval_of(order, tool, result, action)  # equal only when both validate
    if approved is not None:
        return approved
    index, candidate = ready[0]
    field, value = key_pointer(index, normalized(candidate) or {})
    return verdict(
        "needs_human",
        f"the parameters differ from the restore {tool} computes from the baseline ({field} = {value})",
        _point(tool, field, value, "what the lookup would restore instead"),
    )


def build_review(obs: Observations, actions: list[dict[str, Any]]) -> dict[str, Any]:
    verdicts = [judge_action(obs, a) for a in actions]
    counts = {kind: sum(v["verdict"] == kind for v in verdicts) for kind in ("approve", "needs_human", "reject")}
    return {
        "verdicts": verdicts,
        "summary": ", ".join(f"{n} {kind}" for kind, n in counts.items() if n) or "nothing to review",
    }
