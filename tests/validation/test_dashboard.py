"""The operations dashboard in template.yaml shows only metrics the code emits, with the dimensions it emits."""

from __future__ import annotations

import json
import re
from pathlib import Path

from incident_responder.agent import telemetry
from tests.emitted_metrics import GLOBAL_ENV, TEMPLATE, _emitted

REPO = Path(__file__).parents[2]


def _body() -> dict:
    sub = TEMPLATE["Resources"]["OperationsDashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    return json.loads(re.sub(r"\$\{([^}]+)\}", lambda m: f"<{m.group(1)}>", sub))


def _metrics(body: dict) -> list[list]:
    return [m for w in body["widgets"] for m in w["properties"].get("metrics", [])]


def test_every_metric_shown_is_emitted_under_the_service_shown():
    emitted = _emitted()
    assert GLOBAL_ENV["POWERTOOLS_METRICS_NAMESPACE"] == "IncidentResponder"
    shown = [m for m in _metrics(_body()) if isinstance(m[0], str) and m[0] == "IncidentResponder"]
    assert len(shown) >= 15
    for _namespace, name, dimension, service, *_ in shown:
        assert dimension == "service" and name in emitted.get(service, set()), (name, service)


def test_searches_name_emitted_metrics_with_their_dimensions():
    emitted = _emitted()[GLOBAL_ENV["POWERTOOLS_SERVICE_NAME"]]
    searches = [m[0]["expression"] for m in _metrics(_body()) if isinstance(m[0], dict)]
    assert len(searches) == 3
    found = set()
    for expression in searches:
        keys, name = re.match(r"SEARCH\('\{IncidentResponder,([a-z,]+)\} MetricName=\"(\w+)\"'", expression).groups()
        found.add((keys, name))
        if keys == "service,tool":
            assert name in emitted
    assert found == {
        ("service,tool", "ToolDuration"),
        ("service,tool", "ToolErrors"),
        ("service,status", "IncidentsEnded"),
    }
    # The final status is a dimension the report function adds to IncidentsEnded.
    report = (REPO / "handlers" / "report.py").read_text()
    assert 'add_dimension(name="status"' in report and 'name="IncidentsEnded"' in report
    assert {"ToolDuration", "ToolErrors", "ModelDuration", "ModelInputTokens", "ModelOutputTokens"} <= emitted
    assert "ToolDuration" in telemetry.__doc__  # documented where it is written


def test_the_state_machine_widget_reads_this_stacks_state_machine():
    states = [m for m in _metrics(_body()) if isinstance(m[0], str) and m[0] == "AWS/States"]
    assert {m[1] for m in states} == {
        "ExecutionsStarted",
        "ExecutionsSucceeded",
        "ExecutionsFailed",
        "ExecutionsTimedOut",
    }
    assert all(m[2:] == ["StateMachineArn", "<IncidentStateMachine>"] for m in states)
    widths = [(w["x"], w["y"], w["width"]) for w in _body()["widgets"]]
    assert all(x + width <= 24 for x, _, width in widths)  # the dashboard grid is 24 wide
