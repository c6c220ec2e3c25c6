"""The sample events in events/ (for `sam local invoke`) are what each handler accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_lambda_powertools.utilities.parser.models import SnsModel

from incident_responder.alerts import MalformedAlertError, parse_alert
from incident_responder.contracts import Incident

EVENTS = Path(__file__).parents[2] / "events"


def load(name: str) -> dict:
    return json.loads((EVENTS / name).read_text())


@pytest.mark.parametrize("name", ["ingest-cloudwatch-alarm.json", "ingest-project-alert.json"])
def test_ingest_events_parse_to_incidents(name):
    (record,) = SnsModel.model_validate(load(name)).Records
    assert parse_alert(record.Sns.Message).function_name == "data-processor"


def test_malformed_ingest_event_is_rejected_clearly():
    (record,) = SnsModel.model_validate(load("ingest-malformed-alert.json")).Records
    with pytest.raises(MalformedAlertError, match="not JSON"):
        parse_alert(record.Sns.Message)


def test_investigate_event_is_an_incident():
    assert Incident.model_validate(load("investigate.json")["incident"]).metric_name == "Errors"


def test_every_function_in_the_template_has_an_event():
    names = {p.stem.split("-")[0] for p in EVENTS.glob("*.json")}
    assert names >= {"ingest", "investigate", "reconcile", "sweep", "diagnostics"}
