"""enable_event_source_mapping: an event source mapping enabled again.

Everything about it: its restore lookup (the remediation MCP tool), its change (capture, apply, undo), its
guardrail, where its difference shows and how verification judges it (:mod:`incident_responder.actions.base`).
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline, event_source_mapping_arn
from incident_responder.account.state import FunctionConfiguration
from incident_responder.actions.base import Action, Restoration
from incident_responder.actions.change import _Change
from incident_responder.actions.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _lookup
from incident_responder.actions.targets import _other_function, _target_reason
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    EnableEventSourceMappingParams,
    FaultType,
    ProposedAction,
    proposed,
)

# Lambda reports a mapping it is turning on as Enabling for a few seconds: that is not drift.
ENABLED_STATES = ("Enabled", "Enabling")


class MappingRestore(BaseModel):
    uuid: str
    event_source_arn: str
    current_state: str | None = Field(description="State now (None: it no longer invokes the function)")
    baseline_state: str | None
    refused: str | None = Field(default=None, description="why enabling is not proposed, when it is not")


class EventSourceRestoreInfo(BaseModel):
    function_name: str
    drifted: bool = False
    baseline_captured_at: str | None = None
    mappings: list[MappingRestore] = Field(
        default_factory=list, description="the function's mappings whose state differs"
    )
    not_in_baseline: list[str] = Field(
        default_factory=list, description="mapping UUIDs the baseline lacks (left alone)"
    )
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def get_event_source_restore_info(clients: AwsClients, lambda_name: str) -> EventSourceRestoreInfo:
    return _lookup(
        EventSourceRestoreInfo, clients, lambda_name, _event_source_restore_info, EnableEventSourceMapping.sections
    )


def _event_source_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> EventSourceRestoreInfo:
    now = {m.uuid: m for m in current.event_source_mappings}
    mappings, actions = [], []
    for base in baseline.configuration.event_source_mappings:
        mapping = now.get(base.uuid)
        state = mapping.state if mapping else None
        if state == base.state or (base.state == "Enabled" and state in ENABLED_STATES):
            continue
        restore = MappingRestore(
            uuid=base.uuid, event_source_arn=base.event_source_arn, current_state=state, baseline_state=base.state
        )
        mappings.append(restore)
        if base.state != "Enabled":
            restore.refused = f"the baseline recorded it {base.state}: only mappings enabled then are enabled"
        elif mapping is None:
            restore.refused = "it no longer invokes the function (deleted or moved): re-creating it is for a person"
        elif state != "Disabled":
            restore.refused = f"it is {state}: look again once Lambda has settled it"
        else:
            target = event_source_mapping_arn(baseline.function_arn, base.uuid) if baseline.function_arn else base.uuid
            actions.append(
                proposed(
                    fault_type=FaultType.EVENT_SOURCE_DISABLED,
                    action_type=ActionType.ENABLE_EVENT_SOURCE_MAPPING,
                    target_resource=target,
                    parameters=EnableEventSourceMappingParams(function_name=name, uuid=base.uuid),
                    reasoning=f"the mapping from {base.event_source_arn} is Disabled; the baseline recorded it Enabled",
                )
            )
    return EventSourceRestoreInfo(
        function_name=name,
        drifted=bool(mappings),
        baseline_captured_at=baseline.captured_at,
        mappings=mappings,
        not_in_baseline=sorted(set(now) - {m.uuid for m in baseline.configuration.event_source_mappings}),
        actions=actions,
    )


# -- the change: capture, apply, undo ----------------------------------------------------------------


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


# -- the guardrail ----------------------------------------------------------------------------------


# Lambda reports a mapping it is turning on as Enabling for a few seconds before Enabled.
ENABLED_STATES = ("Enabled", "Enabling")


def _check_event_source(
    p: EnableEventSourceMappingParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    reasons = _other_function(p.function_name, current)
    if reasons:
        return reasons
    recorded = {m.uuid: m for m in baseline.event_source_mappings}
    if p.uuid not in recorded:
        known = ", ".join(sorted(recorded)) or "none"
        return [f"mapping {p.uuid} is not one of the function's mappings recorded in the baseline ({known})"]
    if recorded[p.uuid].state != "Enabled":
        return [f"mapping {p.uuid} was {recorded[p.uuid].state} in the baseline, not Enabled"]
    now = next((m for m in current.event_source_mappings if m.uuid == p.uuid), None)
    if now is None:
        return [f"mapping {p.uuid} no longer invokes the function"]
    if now.state in ENABLED_STATES:
        return [f"mapping {p.uuid} is already {now.state}: nothing to restore"]
    return []


# -- the action ------------------------------------------------------------------------------------


class EnableEventSourceMapping(Action):
    """An event source mapping the baseline recorded Enabled enabled again. Medium risk: it resumes delivery."""

    action_type = ActionType.ENABLE_EVENT_SOURCE_MAPPING
    risk = "medium"
    iam_writes = frozenset({"lambda:UpdateEventSourceMapping"})
    # The lookup's field that shows a fault already at the baseline (the offline critic's no-op check).
    no_drift = {
        FaultType.EVENT_SOURCE_DISABLED: ("drifted", "the event source mapping is already in its baseline state"),
    }
    lookup_tool = "get_event_source_restore_info"
    sections = ("event_source_mappings",)
    lookup_model = EventSourceRestoreInfo
    lookup_description = (
        "The function's event source mappings (queues, streams) whose state differs from the baseline, and "
        "UpdateEventSourceMapping Enabled=true for those recorded Enabled and Disabled now."
    )
    change = _EventSourceMapping()

    def lookup(self, clients, lambda_name):
        return get_event_source_restore_info(clients, lambda_name)

    def guardrail(self, action, p, current, baseline, clients):
        return _target_reason(action, "the event source mapping", "esm", [p.uuid]) + _check_event_source(
            p, current, baseline
        )

    def drift_paths(self, p, current):
        return [f"event_source_mappings.{p.uuid}"]

    def verify(self, p, current, baseline):
        found = Restoration(targets=[f"event source mapping {p.uuid}"])
        before = next((m.state for m in baseline.event_source_mappings if m.uuid == p.uuid), None)
        now = next((m.state for m in current.event_source_mappings if m.uuid == p.uuid), None)
        if before != "Enabled" or now not in ENABLED_STATES:
            found.problems.append(f"event source mapping {p.uuid}: baseline {before}, now {now or 'gone'}")
        return found
