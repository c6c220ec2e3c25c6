"""The metrics the deployed code emits, by the service it emits them under, read from the source (what the dashboard may show)."""

from __future__ import annotations

import re
from pathlib import Path

from incident_responder.lab.template import load_template

REPO = Path(__file__).parents[1]
TEMPLATE = load_template()
GLOBAL_ENV = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]


def _emitted() -> dict[str, set[str]]:
    """service dimension -> metric names, read from the handlers' code and the agents' telemetry."""
    from handlers import ingest  # the outcome -> metric table

    emitted: dict[str, set[str]] = {}
    for path in (REPO / "handlers").glob("*.py"):
        code = path.read_text()
        # A handler's metrics are written by the telemetry module of its capability, with the handler's Metrics.
        for module in re.findall(r"^from (incident_responder\.\w+\.telemetry) import", code, re.MULTILINE):
            code += (REPO / module.replace(".", "/")).with_suffix(".py").read_text()
        service = re.search(r'Metrics\(namespace="IncidentResponder", service="([a-z]+)"\)', code)
        if service:
            emitted.setdefault(service.group(1), set()).update(re.findall(r'name="([A-Za-z]+)"', code))
    emitted["ingest"] |= set(ingest.METRIC_FOR_OUTCOME.values())
    approval = (REPO / "handlers" / "approval.py").read_text()
    approval += (REPO / "incident_responder" / "approval" / "telemetry.py").read_text()
    emitted["approval"] |= set(re.findall(r'"(Approval[A-Za-z]+)"', approval))
    agents = (REPO / "incident_responder" / "agent" / "telemetry.py").read_text()
    emitted[GLOBAL_ENV["POWERTOOLS_SERVICE_NAME"]] = set(re.findall(r'_metric\("([A-Za-z]+)"', agents))
    return emitted
