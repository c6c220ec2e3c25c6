"""PROPOSING and REVIEWING: the visibility timeout of the queues the function's event source mappings read."""

from __future__ import annotations

from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline
from incident_responder.account.state import FunctionConfiguration
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    FaultType,
    ProposedAction,
    ProposedRestoreQueueAttributes,
    RestoreQueueAttributesParams,
)
from incident_responder.proposal.lookups.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _lookup


class QueueRestore(BaseModel):
    uuid: str = Field(description="the event source mapping that reads the queue")
    queue_arn: str
    current_visibility_timeout: int | None = Field(description="VisibilityTimeout now, in seconds (None: unreadable)")
    baseline_visibility_timeout: int
    function_timeout: int = Field(description="the function's timeout now, in seconds")
    refused: str | None = Field(default=None, description="why SetQueueAttributes is not proposed, when it is not")


class QueueRestoreInfo(BaseModel):
    function_name: str
    drifted: bool = False
    baseline_captured_at: str | None = None
    queues: list[QueueRestore] = Field(
        default_factory=list, description="the function's source queues whose visibility timeout differs"
    )
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def get_queue_restore_info(clients: AwsClients, lambda_name: str) -> QueueRestoreInfo:
    return _lookup(QueueRestoreInfo, clients, lambda_name, _queue_restore_info)


def _queue_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> QueueRestoreInfo:
    now = {m.uuid: m for m in current.event_source_mappings}
    queues, actions, seen = [], [], set()
    for base in baseline.configuration.event_source_mappings:
        if base.queue_visibility_timeout is None or base.event_source_arn in seen:
            continue  # not a queue, or recorded before queues were; one restore per queue
        mapping = now.get(base.uuid)
        visibility = mapping.queue_visibility_timeout if mapping else None
        if mapping is not None and visibility == base.queue_visibility_timeout:
            continue
        seen.add(base.event_source_arn)
        restore = QueueRestore(
            uuid=base.uuid,
            queue_arn=base.event_source_arn,
            current_visibility_timeout=visibility,
            baseline_visibility_timeout=base.queue_visibility_timeout,
            function_timeout=current.timeout,
        )
        queues.append(restore)
        if mapping is None or mapping.event_source_arn != base.event_source_arn:
            restore.refused = "the function's mapping no longer reads this queue: not a queue of this function now"
        elif visibility is None:
            restore.refused = "the queue's attributes cannot be read now: look again"
        elif base.queue_visibility_timeout < current.timeout:
            restore.refused = (
                f"the baseline's {base.queue_visibility_timeout} s is shorter than the function's timeout "
                f"({current.timeout} s): restoring it would leave messages redelivered while still in flight"
            )
        else:
            actions.append(
                ProposedRestoreQueueAttributes(
                    fault_type=FaultType.EVENT_SOURCE_MISCONFIGURED,
                    action_type=ActionType.RESTORE_QUEUE_ATTRIBUTES,
                    target_resource=base.event_source_arn,
                    parameters=RestoreQueueAttributesParams(
                        queue_arn=base.event_source_arn, visibility_timeout=base.queue_visibility_timeout
                    ),
                    reasoning=f"the visibility timeout of the queue the function reads is {visibility} s; the baseline "
                    f"recorded {base.queue_visibility_timeout} s (the function's timeout is {current.timeout} s)",
                )
            )
    return QueueRestoreInfo(
        function_name=name,
        drifted=bool(queues),
        baseline_captured_at=baseline.captured_at,
        queues=queues,
        actions=actions,
    )
