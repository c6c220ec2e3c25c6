"""PROPOSING and REVIEWING: the state of the function's event source mappings against its baseline."""

from __future__ import annotations

from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline, event_source_mapping_arn
from incident_responder.account.state import FunctionConfiguration
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    EnableEventSourceMappingParams,
    FaultType,
    ProposedAction,
    ProposedEnableEventSourceMapping,
)
from incident_responder.proposal.lookups.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _lookup

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
    return _lookup(EventSourceRestoreInfo, clients, lambda_name, _event_source_restore_info)


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
                ProposedEnableEventSourceMapping(
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
