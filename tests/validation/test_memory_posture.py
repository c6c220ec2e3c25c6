"""Memory's permissions as template.yaml grants them: the report function writes a function's history item and
nothing else of the incident-state table; the diagnostics server and the review read history items only (so a
prompt-injected tool call cannot read an incident, an approval record or a lease through them); retention is a
parameter."""

from __future__ import annotations

from typing import Any

import pytest

from tests.template_reading import as_list, cfn, defaults, ref_name, role_statements

HISTORIES_ONLY = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["history#*"]}}


def _role(function_id: str) -> str:
    return ref_name(cfn()["Resources"][function_id]["Properties"]["Role"])


def _on_state_table(function_id: str, action: str) -> list[dict[str, Any]]:
    return [
        s
        for s in role_statements(_role(function_id))
        if s["Effect"] == "Allow"
        and action in as_list(s["Action"])
        and any("IncidentStateTable" in str(r) for r in as_list(s["Resource"]))
    ]


def test_the_report_function_writes_histories_only():
    (put,) = _on_state_table("ReportFunction", "dynamodb:PutItem")
    assert put["Condition"] == HISTORIES_ONLY
    assert as_list(put["Action"]) == ["dynamodb:PutItem"]
    writes = {
        a
        for s in role_statements(_role("ReportFunction"))
        for a in as_list(s["Action"])
        if a.startswith("dynamodb:") and a != "dynamodb:GetItem"
    }
    assert writes == {"dynamodb:PutItem"}  # no UpdateItem or DeleteItem anywhere
    env = cfn()["Resources"]["ReportFunction"]["Properties"]["Environment"]["Variables"]
    assert env["MEMORY_TTL_DAYS"] == {"Ref": "MemoryTtlDays"} and defaults()["MemoryTtlDays"] == "90"


@pytest.mark.parametrize("function", ["DiagnosticsMcpFunction", "ReviewFunction"])
def test_history_readers_get_history_items_only(function):
    statements = _on_state_table(function, "dynamodb:GetItem")
    assert statements and all(s["Condition"] == HISTORIES_ONLY for s in statements)
    assert all(as_list(s["Action"]) == ["dynamodb:GetItem"] for s in statements)
    # Nothing else of the incident-state table, under any statement.
    others = {
        a
        for s in role_statements(_role(function))
        if any("IncidentStateTable" in str(r) for r in as_list(s["Resource"]))
        for a in as_list(s["Action"])
    }
    assert others == {"dynamodb:GetItem"}
    env = cfn()["Resources"][function]["Properties"]["Environment"]["Variables"]
    assert env["INCIDENT_STATE_TABLE"] == {"Ref": "IncidentStateTable"} and env["MEMORY_DAYS"] == {"Ref": "MemoryDays"}


def test_memory_windows_are_parameters_with_the_documented_defaults():
    assert defaults()["MemoryDays"] == "30" and defaults()["RecurrenceHours"] == "24"
    env = cfn()["Resources"]["ReviewFunction"]["Properties"]["Environment"]["Variables"]
    assert env["RECURRENCE_HOURS"] == {"Ref": "RecurrenceHours"}
