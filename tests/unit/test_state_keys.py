"""The incident-state table's keys: the shapes deployed tables hold, and the ones the state machine builds itself."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from incident_responder.state import keys

ASL = Path(__file__).parents[2] / "statemachine" / "incident_lifecycle.asl.json"
INCIDENT = "data-processor-20261125T011315-8ebe0a5331"
STARTED = "2026-11-25T01:13:15.123Z"


def test_the_stored_key_shapes_do_not_change():
    """Deployed tables hold these values: a change here needs a migration of their items."""
    assert keys.rate("2026-11-25T01") == "rate#2026-11-25T01"
    assert keys.rate("2026-11-25T01", "data-processor") == "rate#data-processor#2026-11-25T01"
    assert keys.group("data-processor", "alarm:data-processor-errors") == "group#data-processor#a384b6a5f5b4ad6b"
    assert keys.approval(INCIDENT) == f"approval#{INCIDENT}"
    assert keys.incident_of_approval(f"approval#{INCIDENT}") == INCIDENT
    assert keys.ledger_head(INCIDENT) == f"remediation#{INCIDENT}"
    assert keys.ledger_step(INCIDENT, 2) == f"remediation#{INCIDENT}#2"
    assert keys.lease("function:data-processor") == "lease#function:data-processor"


def test_only_an_incident_key_has_no_separator():
    others = [
        keys.rate("2026-11-25T01"),
        keys.rate("2026-11-25T01", "orders"),
        keys.group("orders", "error:KeyError"),
        keys.approval(INCIDENT),
        keys.ledger_head(INCIDENT),
        keys.ledger_step(INCIDENT, 1),
        keys.lease("orders"),
    ]
    assert keys.is_incident(INCIDENT)
    assert not any(keys.is_incident(key) for key in others)


def _asl_strings() -> list[str]:
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str):
            found.append(node)

    walk(json.loads(ASL.read_text()))
    return found


def _evaluate(template: str, incident: dict[str, Any]) -> str:
    """One ASL JSONata template (``{% ... %}``) as the state machine evaluates it, for this execution."""
    jsonata = pytest.importorskip("jsonata")
    expression = re.fullmatch(r"\{%(.*)%\}", template.strip(), re.S)
    assert expression, template
    bindings = {
        "states": {"input": {"incident": incident}, "context": {"Execution": {"StartTime": STARTED}}},
        "incident": incident,
    }
    return jsonata.Jsonata(expression.group(1).strip()).evaluate(None, bindings)


def _key_templates(prefix: str) -> list[str]:
    return [s for s in _asl_strings() if s.startswith("{%") and f"'{prefix}'" in s]


def test_the_state_machine_builds_the_budget_keys_of_this_module():
    templates = _key_templates(keys.RATE_PREFIX)
    assert len(templates) == 2, templates
    incident = {"incident_id": INCIDENT, "function_name": "data-processor"}
    built = sorted(_evaluate(t, incident) for t in templates)
    assert built == sorted([keys.rate(STARTED[:13]), keys.rate(STARTED[:13], "data-processor")])


def test_the_state_machine_builds_no_other_key():
    """Every key the ASL writes or reads in the incident-state table is an incident's or a budget's (the leases are
    remediate's: which resources an incident leased is in its ledger)."""
    prefixed = [s for s in _asl_strings() if s.startswith("{%") and re.search(r"'[a-z]+#'", s)]
    prefixes = {p for s in prefixed for p in re.findall(r"'([a-z]+#)'", s)}
    assert prefixes == {keys.RATE_PREFIX}
