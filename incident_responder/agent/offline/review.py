"""The review policy: look each action's fault up again, approve only an action the lookup would make
itself, reject one that changes nothing (already at the baseline), and leave anything else to a person."""

from __future__ import annotations

import json
from typing import Any

from incident_responder.actions.registry import LOOKUP_FOR_FAULT, NO_DRIFT
from incident_responder.agent.offline.observations import Observations
from incident_responder.agent.offline.proposal import next_remediation_tools
from incident_responder.agent.protocol import TOOL_ERROR_PREFIX
from incident_responder.core.contracts import PARAMETERS_FOR_ACTION

# The parameter that says what an action sets, cited as the evidence for a verdict (in this order).
KEY_PARAMETERS = (
    "reserved_concurrent_executions",
    "timeout",
    "memory_size",
    "ephemeral_storage",
    "policy_name",
    "attach_policy_arn",
    "function_version",
    "key_arn",
    "uuid",
    "secret_arn",
    "visibility_timeout",
)


def next_review_tool(obs: Observations, actions: list[dict[str, Any]], available: set[str]) -> str | None:
    return next(iter(next_review_tools(obs, actions, available)), None)


def next_review_tools(obs: Observations, actions: list[dict[str, Any]], available: set[str]) -> list[str]:
    """The lookups of every proposed action's fault, all in one turn."""
    return next_remediation_tools(obs, {"fault_types": [a.get("fault_type") for a in actions]}, available)


def _normalized(action: dict[str, Any]) -> dict[str, Any] | None:
    """An action's parameters as the contract dumps them, so equal restores compare equal."""
    try:
        model = PARAMETERS_FOR_ACTION[action["action_type"]]
        return model.model_validate(action.get("parameters") or {}).model_dump(mode="json")
    except (KeyError, ValueError):
        return None


def _key_pointer(index: int, parameters: dict[str, Any]) -> tuple[str, str]:
    for key in KEY_PARAMETERS:
        if key in parameters and (parameters[key] is not None or key == "reserved_concurrent_executions"):
            value = parameters[key]
            return f"actions[{index}].parameters.{key}", "null" if value is None else str(value)
    # Another action type's: its first setting beside the function's name (handler, ...).
    for key, value in parameters.items():
        if key != "function_name" and isinstance(value, str | int) and not isinstance(value, bool):
            return f"actions[{index}].parameters.{key}", str(value)
    # A list of names, ids or ARNs (subnet_ids, layers): its first item, or the empty list itself.
    for key, value in parameters.items():
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            if value:
                return f"actions[{index}].parameters.{key}[0]", value[0]
            return f"actions[{index}].parameters.{key}", json.dumps(value)
    if parameters.get("security_group_id"):
        return f"actions[{index}].parameters.security_group_id", parameters["security_group_id"]
    entry = (parameters.get("remove_nacl_entries") or [{}])[0]
    return f"actions[{index}].parameters.remove_nacl_entries[0].rule_number", str(entry.get("rule_number"))


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
    proposed = _normalized(action)
    for index, candidate in ready:
        # Equal only when both validate: an action of no known type is no restore to approve.
        if (
            proposed is not None
            and candidate.get("action_type") == action.get("action_type")
            and _normalized(candidate) == proposed
        ):
            field, value = _key_pointer(index, proposed)
            return verdict(
                "approve",
                f"restores exactly what {tool} computes from the baseline ({field} = {value})",
                _point(tool, field, value, "the lookup's own restore for this fault sets this value"),
            )
    index, candidate = ready[0]
    field, value = _key_pointer(index, _normalized(candidate) or {})
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
