"""The proposal policy: look up each diagnosed fault's restore, copy the lookups' ready-made actions, and
say what a person should look at for the faults no action fixes."""

from __future__ import annotations

from typing import Any

from incident_responder.agent.offline.observations import Observations
from incident_responder.agent.resolver import LOOKUP_FOR_FAULT
from incident_responder.contracts import UNRESOLVABLE_FAULTS
from incident_responder.log_records import classify_error_type

# What a person should look at for a fault no action fixes.
FOR_A_PERSON = {
    "application_error": (
        "application_error: the function's own code fails{errors}; a person fixes the code and deploys it "
        "(no configuration change would help)"
    ),
    "dependency_throttling": (
        "dependency_throttling: a downstream AWS service throttles the function's requests{errors} and nothing of "
        "the function changed; a person should look at the downstream table's capacity (provisioned read/write "
        "capacity or on-demand, hot keys), other writers to it, and the function's retries and backoff"
    ),
    "unknown": "unknown: no tool output explained the alert; a person investigates",
}


def next_remediation_tool(obs: Observations, diagnosis: dict[str, Any], available: set[str]) -> str | None:
    return next(iter(next_remediation_tools(obs, diagnosis, available)), None)


def next_remediation_tools(obs: Observations, diagnosis: dict[str, Any], available: set[str]) -> list[str]:
    """The lookups of every diagnosed fault not looked up yet, all in one turn (none depends on another)."""
    lookups = (LOOKUP_FOR_FAULT.get(fault) for fault in diagnosis.get("fault_types", []))
    return [tool for tool in dict.fromkeys(lookups) if tool and tool in available and tool not in obs.called]


def _error_names(diagnosis: dict[str, Any], fault: str) -> str:
    """The known AWS or platform error types the diagnosis's evidence names (never its free text)."""
    if fault != "dependency_throttling":
        return ""
    names: list[str] = []
    for pointer in diagnosis.get("evidence", []):
        value = str(pointer.get("value", ""))
        if str(pointer.get("field", "")).endswith(".error_type") and value not in names and classify_error_type(value):
            names.append(value)
    return f" ({', '.join(names)})" if names else ""


def build_proposal(obs: Observations, diagnosis: dict[str, Any]) -> dict[str, Any]:
    """The submission: the lookups' ready-made actions for the diagnosed faults, as a model copies them."""
    faults = diagnosis.get("fault_types", [])
    unresolvable = [f for f in faults if f in UNRESOLVABLE_FAULTS or f not in LOOKUP_FOR_FAULT]
    actions: list[dict[str, Any]] = []
    for tool in dict.fromkeys(LOOKUP_FOR_FAULT[f] for f in faults if f in LOOKUP_FOR_FAULT):
        result = obs.results.get(tool, {})
        actions += [a for a in result.get("actions", []) if a.get("fault_type") in faults and not result.get("error")]
    covered = {a["fault_type"] for a in actions}
    notes = []
    for fault in faults:
        if fault in LOOKUP_FOR_FAULT and fault not in covered:
            unresolvable.append(fault)
            notes.append(f"no restore parameters found for {fault}")
    for_a_person = [
        FOR_A_PERSON[f].format(errors=_error_names(diagnosis, f)) for f in unresolvable if f in FOR_A_PERSON
    ]
    return {
        "actions": actions,
        "confidence": "high" if actions and not notes else ("low" if not actions else "medium"),
        "chain_of_thought": "; ".join([a["reasoning"] for a in actions] + notes + for_a_person)
        or "nothing to restore automatically",
        "unresolvable_faults": list(dict.fromkeys(unresolvable)),
    }
