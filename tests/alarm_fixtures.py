"""Recorded CloudWatch alarm notifications (tests/fixtures/alarms) and the child alarms a composite names."""

from __future__ import annotations

import json
from pathlib import Path

from incident_responder.core.aws import AwsClients
from incident_responder.lab.account.resources import create_function_alarms

FIXTURES = Path(__file__).parent / "fixtures" / "alarms"


INDEX = json.loads((FIXTURES / "index.json").read_text())["fixtures"]


def create_child_alarms(clients: AwsClients, function: str = "data-processor") -> None:
    """The composites' children: errors of the function (in ALARM) and its throttles (OK)."""
    cloudwatch = clients.get("cloudwatch")
    errors, throttles = create_function_alarms(clients, function, threshold=5.0)
    for name, state in ((errors, "ALARM"), (throttles, "OK")):
        cloudwatch.set_alarm_state(AlarmName=name, StateValue=state, StateReason="lab")
