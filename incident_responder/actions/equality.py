"""Whether a proposed action is the restore a lookup computes itself: the comparison the critic's approval rests on.

Used by the review's deterministic path (:mod:`incident_responder.review.determined`) and the offline critic.
"""

from __future__ import annotations

import json
from typing import Any

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


def normalized(action: dict[str, Any]) -> dict[str, Any] | None:
    """An action's parameters as the contract dumps them, so equal restores compare equal (None: not valid)."""
    try:
        model = PARAMETERS_FOR_ACTION[action["action_type"]]
        return model.model_validate(action.get("parameters") or {}).model_dump(mode="json")
    except (KeyError, ValueError):
        return None


def key_pointer(index: int, parameters: dict[str, Any]) -> tuple[str, str]:
    """The field of ``actions[index]`` (and its value) that says what a restore sets: a verdict's evidence."""
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


def approval_of(order: Any, tool: str, answer: dict[str, Any], action: dict[str, Any]) -> dict[str, Any] | None:
    """The approve verdict for ``action`` when the lookup's ``answer`` holds that same restore for its fault, with
    the lookup's value as the evidence; None when it does not."""
    proposed = normalized(action)
    if proposed is None or answer.get("error"):
        return None
    for index, candidate in enumerate(answer.get("actions") or []):
        if (
            candidate.get("fault_type") == action.get("fault_type")
            and candidate.get("action_type") == action.get("action_type")
            and normalized(candidate) == proposed
        ):
            field, value = key_pointer(index, proposed)
            return {
                "execution_order": order,
                "verdict": "approve",
                "reasons": [f"restores exactly what {tool} computes from the baseline ({field} = {value})"],
                "evidence": [
                    {
                        "tool": tool,
                        "field": field,
                        "value": value,
                        "interpretation": "the lookup's own restore for this fault sets this value",
                    }
                ],
            }
    return None
