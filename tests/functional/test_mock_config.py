"""The MockConfigFile scenarios (the ones Step Functions Local / LocalStack would run) on the local engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from incident_responder.intake.alerts import parse_alert
from incident_responder.lab.engine import wait_for_execution
from incident_responder.lab.mock_config import load_test_case, register_test_case
from incident_responder.lab.moto_patches.stepfunctions import instant_retries
from incident_responder.state.lifecycle import execution_input, execution_path, get_incident_state
from tests.conftest import STATE_TABLE

FOLDER = Path(__file__).parents[1] / "statemachine"
EXPECTED = json.loads((FOLDER / "expected.json").read_text())


@pytest.mark.parametrize("case", list(EXPECTED))
def test_mock_config_case(clients, lifecycle, dispatcher, case):
    machine = lifecycle(InvestigateTimeoutSeconds=1)
    mocks = load_test_case(
        FOLDER / "MockConfigFile.json",
        "IncidentLifecycle",
        case,
        {"Run investigator agent": "investigate", "Run proposer agent": "propose"},
    )
    register_test_case(dispatcher, mocks)
    incident = parse_alert({"function_name": "data-processor", "detected_at": "2026-11-23T04:00:00Z", "alert_id": case})
    sfn = clients.get("stepfunctions")
    with instant_retries():
        arn = sfn.start_execution(
            stateMachineArn=machine, name=incident.incident_id, input=json.dumps(execution_input(incident))
        )["executionArn"]
        execution = wait_for_execution(sfn, arn)
    expected = EXPECTED[case]
    assert execution["status"] == expected["execution"]
    assert execution_path(sfn, arn)[-2:] == expected["last_states"]
    state = get_incident_state(clients, STATE_TABLE, incident.incident_id)
    assert state["status"] == expected["status"]
    assert state.get("error_category") == expected.get("error_category")
    assert mocks["investigate"].invocations == expected["invocations"]
