"""restore_queue_attributes: the visibility timeout of a queue the function's mappings read put back.

Everything about it: its restore lookup (the remediation MCP tool), its change (capture, apply, undo), its
guardrail, where its difference shows and how verification judges it (:mod:`incident_responder.actions.base`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline
from incident_responder.account.event_sources import read_queue_url
from incident_responder.account.state import FunctionConfiguration
from incident_responder.actions.base import Action, Restoration
from incident_responder.actions.change import _Change
from incident_responder.actions.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _lookup
from incident_responder.actions.targets import _target_reason
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    FaultType,
    ProposedAction,
    RestoreQueueAttributesParams,
    proposed,
)


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
    return _lookup(QueueRestoreInfo, clients, lambda_name, _queue_restore_info, RestoreQueueAttributes.sections)


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
                proposed(
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


# -- the change: capture, apply, undo ----------------------------------------------------------------


class _QueueVisibility(_Change):
    """SetQueueAttributes VisibilityTimeout on the queue a mapping of the function reads."""

    _url = staticmethod(read_queue_url)

    def resources(self, p: RestoreQueueAttributesParams) -> list[str]:
        return [f"queue:{p.queue_arn}"]

    def satisfied(self, p: RestoreQueueAttributesParams, state: dict[str, Any]) -> bool:
        return bool(state["visibility_timeout"] == p.visibility_timeout)

    def capture(self, clients: AwsClients, p: RestoreQueueAttributesParams) -> dict[str, Any]:
        sqs = clients.get("sqs")
        attributes = sqs.get_queue_attributes(
            QueueUrl=self._url(clients, p.queue_arn), AttributeNames=["VisibilityTimeout"]
        )["Attributes"]
        return {"queue_arn": p.queue_arn, "visibility_timeout": int(attributes["VisibilityTimeout"])}

    def apply(self, clients: AwsClients, p: RestoreQueueAttributesParams) -> str:
        return self._set(clients, p, p.visibility_timeout)

    def restore(self, clients: AwsClients, p: RestoreQueueAttributesParams, prior: dict[str, Any]) -> None:
        self._set(clients, p, prior["visibility_timeout"])

    def _set(self, clients: AwsClients, p: RestoreQueueAttributesParams, seconds: int) -> str:
        if self.capture(clients, p)["visibility_timeout"] == seconds:
            return f"the visibility timeout of {p.queue_arn} is already {seconds} s"
        clients.get("sqs").set_queue_attributes(
            QueueUrl=self._url(clients, p.queue_arn), Attributes={"VisibilityTimeout": str(seconds)}
        )
        return f"set the visibility timeout of {p.queue_arn} to {seconds} s"


# -- the guardrail ----------------------------------------------------------------------------------


def _check_queue(
    p: RestoreQueueAttributesParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    recorded = [m for m in baseline.event_source_mappings if m.queue_visibility_timeout is not None]
    reads = [m for m in recorded if m.event_source_arn == p.queue_arn]
    if not reads:
        known = ", ".join(sorted({m.event_source_arn for m in recorded})) or "none"
        return [f"queue {p.queue_arn} is not the source of one of the function's mappings in the baseline ({known})"]
    before = reads[0].queue_visibility_timeout
    if any(m.queue_visibility_timeout != before for m in reads):
        return [f"the baseline recorded different visibility timeouts for queue {p.queue_arn}: a person decides"]
    if p.visibility_timeout != before:
        return [
            f"visibility timeout {p.visibility_timeout} s must equal the baseline's {before} s for queue {p.queue_arn}"
        ]
    mine = {m.uuid for m in reads}
    now = [m for m in current.event_source_mappings if m.uuid in mine and m.event_source_arn == p.queue_arn]
    if not now:
        return [f"the function's mapping no longer reads queue {p.queue_arn}"]
    if before is not None and before < current.timeout:
        return [
            f"the baseline's visibility timeout ({before} s) is shorter than the function's timeout "
            f"({current.timeout} s): restoring it leaves messages redelivered while still in flight"
        ]
    if all(m.queue_visibility_timeout == before for m in now):
        return [
            f"queue {p.queue_arn}'s visibility timeout already equals the baseline ({before} s): nothing to restore"
        ]
    return []


# -- the action ------------------------------------------------------------------------------------


class RestoreQueueAttributes(Action):
    """The visibility timeout of a queue the function's mappings read put back to the baseline's. Medium risk: it
    changes when the queue redelivers."""

    action_type = ActionType.RESTORE_QUEUE_ATTRIBUTES
    risk = "medium"
    iam_writes = frozenset({"sqs:SetQueueAttributes"})
    # The lookup's field that shows a fault already at the baseline (the offline critic's no-op check).
    no_drift = {
        FaultType.EVENT_SOURCE_MISCONFIGURED: (
            "drifted",
            "the source queue's visibility timeout already equals the baseline",
        ),
    }
    lookup_tool = "get_queue_restore_info"
    sections = ("event_source_mappings",)
    lookup_model = QueueRestoreInfo
    lookup_description = (
        "The visibility timeout of each SQS queue the function's event source mappings read against the baseline, "
        "with the function's timeout, and SetQueueAttributes VisibilityTimeout back to the baseline's value (refused "
        "when that value is shorter than the function's timeout or the mapping no longer reads the queue)."
    )
    change = _QueueVisibility()

    def lookup(self, clients, lambda_name):
        return get_queue_restore_info(clients, lambda_name)

    def guardrail(self, action, p, current, baseline, clients):
        return _target_reason(action, "the queue", "sqs", [p.queue_arn]) + _check_queue(p, current, baseline)

    def drift_paths(self, p, current):
        return [
            f"event_source_mappings.{m.uuid}.queue_visibility_timeout"
            for m in current.event_source_mappings
            if m.event_source_arn == p.queue_arn
        ]

    def verify(self, p, current, baseline):
        found = Restoration(targets=[f"the visibility timeout of {p.queue_arn}"])
        mine = [m.uuid for m in baseline.event_source_mappings if m.event_source_arn == p.queue_arn]
        for uuid in mine:
            timeout_before = next(
                (m.queue_visibility_timeout for m in baseline.event_source_mappings if m.uuid == uuid), None
            )
            timeout_now = next(
                (m.queue_visibility_timeout for m in current.event_source_mappings if m.uuid == uuid), None
            )
            if timeout_before is None or timeout_now != timeout_before:
                found.problems.append(
                    f"queue {p.queue_arn} (mapping {uuid}): "
                    f"visibility timeout baseline {timeout_before}, now {timeout_now}"
                )
        if not mine:
            found.problems.append(f"queue {p.queue_arn}: no mapping of the function's baseline reads it")
        return found
