"""REMEDIATING and ROLLING_BACK: an event source mapping enabled again, waiting out Lambda's transitions."""

from __future__ import annotations

import time
from typing import Any

from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import EnableEventSourceMappingParams
from incident_responder.remediation.changes.base import _Change

# Lambda moves a mapping through these for a few seconds and refuses an update meanwhile
# (ResourceInUseException); Enabling / Disabling are recorded as where they lead.
_MAPPING_TRANSITIONS = ("Creating", "Enabling", "Disabling", "Updating")
_MAPPING_SETTLED = {"Enabling": "Enabled", "Disabling": "Disabled"}
MAPPING_WAIT = {"delay": 2.0, "attempts": 30}
_sleep = time.sleep


class _EventSourceMapping(_Change):
    def resources(self, p: EnableEventSourceMappingParams) -> list[str]:
        return [f"event-source-mapping:{p.uuid}"]

    def satisfied(self, p: EnableEventSourceMappingParams, state: dict[str, Any]) -> bool:
        return bool(state["state"] == "Enabled")

    def capture(self, clients: AwsClients, p: EnableEventSourceMappingParams) -> dict[str, Any]:
        state = clients.get("lambda").get_event_source_mapping(UUID=p.uuid)["State"]
        return {"uuid": p.uuid, "state": _MAPPING_SETTLED.get(state, state)}

    def apply(self, clients: AwsClients, p: EnableEventSourceMappingParams) -> str:
        return self._set(clients, p, True)

    def restore(self, clients: AwsClients, p: EnableEventSourceMappingParams, prior: dict[str, Any]) -> None:
        if prior["state"] in ("Enabled", "Disabled"):
            self._set(clients, p, prior["state"] == "Enabled")

    def _set(self, clients: AwsClients, p: EnableEventSourceMappingParams, enabled: bool) -> str:
        lam = clients.get("lambda")
        wanted = "Enabled" if enabled else "Disabled"
        state = lam.get_event_source_mapping(UUID=p.uuid)["State"]
        for _ in range(int(MAPPING_WAIT["attempts"])):
            if _MAPPING_SETTLED.get(state, state) == wanted:
                return f"event source mapping {p.uuid} is already {state}"
            if state not in _MAPPING_TRANSITIONS:
                break
            _sleep(MAPPING_WAIT["delay"])
            state = lam.get_event_source_mapping(UUID=p.uuid)["State"]
        lam.update_event_source_mapping(UUID=p.uuid, Enabled=enabled)
        return f"{'enabled' if enabled else 'disabled'} event source mapping {p.uuid} of {p.function_name}"
