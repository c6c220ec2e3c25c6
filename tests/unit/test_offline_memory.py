"""The offline investigator with get_incident_history: the history and the drift first; the last verified fault
shown again by the drift (and nothing else) is concluded from the drift; anything else is investigated as without
memory, one turn later, and reaches the same diagnosis."""

from __future__ import annotations

import pytest

from tests.unit.test_offline_diagnosis import (
    DENIED,
    POLICY_REMOVED,
    diagnose,
    drift,
    faults,
    incident,
    invocation,
    logs,
    tools,
)


def history(*incidents: dict) -> dict:
    return {"function_name": "orders-api", "window_days": 30, "incidents": list(incidents), "summary": "..."}


def past(fault: str, *, verified: bool = True) -> dict:
    return {
        "incident_id": "orders-api-20261126T100000-aaaaaaaaaa",
        "started_at": "2026-11-26T10:00:00Z",
        "ended_at": "2026-11-26T10:05:00Z",
        "status": "REMEDIATED" if verified else "ROLLED_BACK",
        "fault_types": [fault],
        **({"verified_at": "2026-11-26T10:05:00Z"} if verified else {}),
    }


def _run(answer: dict):
    return diagnose(
        incident(),
        **tools(
            get_recent_logs=logs(invocation("2", DENIED)),
            get_config_drift=drift(POLICY_REMOVED),
            get_incident_history=answer,
        ),
    )


def test_the_last_verified_fault_shown_again_is_concluded_from_the_drift():
    diagnosis, _, called = _run(history(past("permission_loss")))
    assert called == [["get_incident_history", "get_config_drift"]]
    assert faults(diagnosis) == {"permission_loss"}
    assert all(e.tool != "get_incident_history" for e in diagnosis.evidence)  # the history is never evidence
    assert any("get_incident_history" in gap for gap in diagnosis.investigation_gaps)


@pytest.mark.parametrize(
    "answer",
    [
        history(),  # no past incident
        history(past("timeout")),  # another fault
        history(past("permission_loss", verified=False)),  # rolled back last time: no fix to trust
        {"function_name": "orders-api", "window_days": 30, "error": "AccessDeniedException: no"},
    ],
)
def test_otherwise_it_investigates_as_without_memory(answer):
    diagnosis, _, called = _run(answer)
    assert called == [["get_incident_history", "get_config_drift"], ["get_recent_logs"]]
    assert faults(diagnosis) == {"permission_loss"}
    assert not any("get_incident_history" in gap for gap in diagnosis.investigation_gaps)
