"""events/ (for `sam local invoke`) and events/env.json (`--env-vars`) cover every function in template.yaml."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from aws_lambda_powertools.utilities.parser.models import SnsModel

from incident_responder.alerts import MalformedAlertError, parse_alert
from incident_responder.contracts import Incident
from incident_responder.lab.stack import load_template
from incident_responder.settings import (
    IngestSettings,
    InvestigateSettings,
    McpServerSettings,
    ProposeSettings,
    ReconcileSettings,
    SweepSettings,
)

EVENTS = Path(__file__).parents[2] / "events"
TEMPLATE = load_template()
FUNCTIONS = {
    logical_id: resource["Properties"]
    for logical_id, resource in TEMPLATE["Resources"].items()
    if resource["Type"] == "AWS::Serverless::Function"
}
SETTINGS_FOR_HANDLER = {
    "handlers.ingest.handler": IngestSettings,
    "handlers.investigate.handler": InvestigateSettings,
    "handlers.propose.handler": ProposeSettings,
    "handlers.diagnostics_mcp.handler": McpServerSettings,
    "handlers.remediation_mcp.handler": McpServerSettings,
    "handlers.reconcile.handler": ReconcileSettings,
    "handlers.reconcile.sweep_handler": SweepSettings,
}


def load(name: str) -> dict:
    return json.loads((EVENTS / name).read_text())


def event_prefix(logical_id: str) -> str:
    """``DiagnosticsMcpFunction`` -> ``diagnostics-mcp``: the events of a function start with it."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", logical_id.removesuffix("Function")).lower()


def declared_variables(logical_id: str) -> set[str]:
    globals_ = TEMPLATE["Globals"]["Function"].get("Environment", {}).get("Variables", {})
    own = FUNCTIONS[logical_id].get("Environment", {}).get("Variables", {})
    return set(globals_) | set(own)


@pytest.mark.parametrize("logical_id", sorted(FUNCTIONS))
def test_every_function_has_an_event(logical_id):
    prefix = event_prefix(logical_id)
    assert [p.name for p in EVENTS.glob(f"{prefix}*.json")], f"no events/{prefix}*.json for {logical_id}"


def test_every_handler_has_a_settings_model():
    assert {p["Handler"] for p in FUNCTIONS.values()} == set(SETTINGS_FOR_HANDLER)


@pytest.mark.parametrize("logical_id", sorted(FUNCTIONS))
def test_env_vars_file_resolves_each_function_environment(logical_id):
    """`sam local invoke --env-vars events/env.json` gives each function an environment its settings accept."""
    values = json.loads((EVENTS / "env.json").read_text())[logical_id]
    assert set(values) <= declared_variables(logical_id), "sam local only overrides variables the template declares"
    SETTINGS_FOR_HANDLER[FUNCTIONS[logical_id]["Handler"]].from_env(values)


@pytest.mark.parametrize("logical_id", sorted(FUNCTIONS))
def test_the_template_gives_every_required_setting(logical_id):
    model = SETTINGS_FOR_HANDLER[FUNCTIONS[logical_id]["Handler"]]
    required = {name.upper() for name, field in model.model_fields.items() if field.is_required()}
    assert required <= declared_variables(logical_id)


@pytest.mark.parametrize("name", ["ingest-cloudwatch-alarm.json", "ingest-project-alert.json"])
def test_ingest_events_parse_to_incidents(name):
    (record,) = SnsModel.model_validate(load(name)).Records
    assert parse_alert(record.Sns.Message).function_name == "data-processor"


def test_malformed_ingest_event_is_rejected_clearly():
    (record,) = SnsModel.model_validate(load("ingest-malformed-alert.json")).Records
    with pytest.raises(MalformedAlertError, match="not JSON"):
        parse_alert(record.Sns.Message)


@pytest.mark.parametrize("name", ["investigate.json", "propose.json"])
def test_agent_events_carry_an_incident(name):
    assert Incident.model_validate(load(name)["incident"]).metric_name == "Errors"


def test_propose_event_carries_a_diagnosis_and_its_summary():
    investigation = load("propose.json")["investigation"]
    from incident_responder.contracts import Diagnosis
    from incident_responder.investigation import DiagnosisSummary

    Diagnosis.model_validate(investigation["diagnosis"])
    assert DiagnosisSummary.model_validate(investigation["diagnosis_summary"]).fault_types == ["permission_loss"]
