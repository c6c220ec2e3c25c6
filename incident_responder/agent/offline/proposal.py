"""The proposal policy: look up each diagnosed fault's restore, copy the lookups' ready-made actions, and
say what a person should look at for the faults no action fixes."""

from __future__ import annotations

import re
from typing import Any

from incident_responder.account.log_records import classify_error_type
from incident_responder.actions.registry import LOOKUP_FOR_FAULT, lookup_order, ready_actions
from incident_responder.agent.offline.handover import runbook_steps
from incident_responder.agent.offline.observations import Observations
from incident_responder.agent.protocol import RUNBOOK_TAG
from incident_responder.core.contracts import UNRESOLVABLE_FAULTS

# What a person should look at for a fault no action fixes. The fields ({errors}, {variables}, {key},
# {function}, {other_function}) are filled from the diagnosis's evidence, never from its free text.
FOR_A_PERSON = {
    "application_error": (
        "application_error: the function's own code fails{errors}; a person fixes the code and deploys it "
        "(no configuration change would help)"
    ),
    "code_package_invalid": (
        "code_package_invalid: the runtime cannot use the function's deployment package{errors}; a person fixes the "
        "package (file permissions 644 and 755, the handler's file or bootstrap at its root) and deploys it again"
    ),
    "dependency_throttling": (
        "dependency_throttling: a downstream AWS service throttles the function's requests{errors} and nothing of "
        "the function changed; a person should look at the downstream table's capacity (provisioned read/write "
        "capacity or on-demand, hot keys), other writers to it, and the function's retries and backoff"
    ),
    "configuration_drift": (
        "configuration_drift: an environment variable the code needs was removed or changed{variables}: the baseline "
        "keeps names and digests, never values, so a person restores the value"
    ),
    "kms_access_denied": (
        "kms_access_denied: the execution role may no longer decrypt with the key encrypting its environment{key} "
        "while the key is enabled; a person restores the key policy statement or grant that let the role decrypt"
    ),
    "account_concurrency_exhausted": (
        "account_concurrency_exhausted: {other_function} is consuming the account's concurrency and {function}, "
        "with no reservation of its own, is throttled; a person could reserve concurrency for {function}, cap "
        "{other_function}'s reserved concurrency, or request a higher account concurrency limit"
    ),
    "recursive_loop": (
        "recursive_loop: the function writes to the queue that triggers it, and Lambda's recursive loop "
        "detection stopped the chain; a person fixes the code or configuration that names its own trigger queue"
    ),
    "unknown": "unknown: no tool output explained the alert; a person investigates",
}
# What may be quoted from evidence values: names AWS accepts, nothing else.
_VARIABLE = re.compile(r"^environment\.([A-Za-z][A-Za-z0-9_]{0,127})$")
_FUNCTION = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_TOP_FUNCTION_FIELD = re.compile(r"^account\.top_functions\[\d+\]\.function_name$")
_KEY_ARN = re.compile(r"arn:aws[a-zA-Z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]{1,128}")


def next_remediation_tool(obs: Observations, diagnosis: dict[str, Any], available: set[str]) -> str | None:
    return next(iter(next_remediation_tools(obs, diagnosis, available)), None)


def next_remediation_tools(obs: Observations, diagnosis: dict[str, Any], available: set[str]) -> list[str]:
    """The lookups of every diagnosed fault not looked up yet, all in one turn (none depends on another)."""
    lookups = lookup_order(diagnosis.get("fault_types", []))
    return [tool for tool in lookups if tool in available and tool not in obs.called]


def _error_names(diagnosis: dict[str, Any], fault: str) -> str:
    """The known AWS or platform error types the diagnosis's evidence names (never its free text)."""
    if fault not in ("dependency_throttling", "code_package_invalid"):
        return ""
    names: list[str] = []
    for pointer in diagnosis.get("evidence", []):
        value = str(pointer.get("value", ""))
        if str(pointer.get("field", "")).endswith(".error_type") and value not in names and classify_error_type(value):
            names.append(value)
    return f" ({', '.join(names)})" if names else ""


def _pointers(diagnosis: dict[str, Any], tool: str) -> list[tuple[str, str]]:
    return [
        (str(p.get("field", "")), str(p.get("value", "")))
        for p in diagnosis.get("evidence", [])
        if isinstance(p, dict) and p.get("tool") == tool
    ]


def _details(diagnosis: dict[str, Any], fault: str, function_name: str | None) -> dict[str, str]:
    """The fields of a FOR_A_PERSON text, from the evidence pointers' values (names only, checked by pattern)."""
    variables = list(
        dict.fromkeys(m.group(1) for _, v in _pointers(diagnosis, "get_config_drift") if (m := _VARIABLE.match(v)))
    )
    keys = list(
        dict.fromkeys(m.group(0) for _, v in _pointers(diagnosis, "get_config_drift") if (m := _KEY_ARN.search(v)))
    )
    others = [
        v
        for f, v in _pointers(diagnosis, "get_function_metrics")
        if _TOP_FUNCTION_FIELD.match(f) and _FUNCTION.match(v)
    ]
    own = function_name if function_name and _FUNCTION.match(function_name) else "this function"
    return {
        "errors": _error_names(diagnosis, fault),
        "variables": f" ({', '.join(variables)})" if variables else "",
        "key": f" ({keys[0]})" if keys else "",
        "function": own,
        "other_function": next((o for o in others if o != own), "another function"),
    }


def build_proposal(obs: Observations, diagnosis: dict[str, Any]) -> dict[str, Any]:
    """The submission: the lookups' ready-made actions for the diagnosed faults, as a model copies them."""
    faults = diagnosis.get("fault_types", [])
    unresolvable = [f for f in faults if f in UNRESOLVABLE_FAULTS or f not in LOOKUP_FOR_FAULT]
    actions = ready_actions(faults, [{"tool": tool, "result": obs.results.get(tool)} for tool in lookup_order(faults)])
    covered = {a["fault_type"] for a in actions}
    notes = []
    for fault in faults:
        if fault in LOOKUP_FOR_FAULT and fault not in covered:
            unresolvable.append(fault)
            notes.append(f"no restore parameters found for {fault}")
    for_a_person = [
        FOR_A_PERSON[f].format(**_details(diagnosis, f, obs.function_name)) for f in unresolvable if f in FOR_A_PERSON
    ]
    unresolvable = list(dict.fromkeys(unresolvable))
    handover = runbook_steps(obs.quoted.get(RUNBOOK_TAG) or {}, unresolvable)
    return {
        "actions": actions,
        "handover": handover,
        "confidence": "high" if actions and not notes else ("low" if not actions else "medium"),
        "chain_of_thought": "; ".join([a["reasoning"] for a in actions] + notes + for_a_person)
        or "nothing to restore automatically",
        "unresolvable_faults": unresolvable,
    }
