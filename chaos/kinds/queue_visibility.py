"""queue_visibility: the visibility timeout of the queue the function's mapping reads drops below how long a batch
takes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chaos.errors import ChaosError
from chaos.kinds.base import QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.account.event_sources import read_queue_url, read_queue_visibility_timeout
from incident_responder.core.contracts import FaultType


class QueueVisibility(KindParameters):
    """The visibility timeout of the queue the function's mapping reads drops to ``seconds``."""

    kind: Literal["queue_visibility"]
    seconds: int = Field(ge=0, le=43200)


class QueueVisibilityKind(ChaosKind[QueueVisibility]):
    """Set the visibility timeout of every SQS queue the function's mappings read."""

    parameters = QueueVisibility
    fault_type = FaultType.EVENT_SOURCE_MISCONFIGURED
    workloads = frozenset({QUEUE_CONSUMER})
    refusal = "has no SQS event source mapping"
    slots = ("queue",)  # queue.<arn>: its visibility timeout
    help = "set the visibility timeout of the queue its mapping reads"
    example = {"seconds": 1}

    def inject(self, target: FaultTarget, params: QueueVisibility) -> list[str]:
        seconds = params.seconds
        queues = target.sqs_sources()
        if not queues:
            raise ChaosError(f"{target.function_name} has no SQS event source mapping: no queue feeds it")
        sqs = target.clients.get("sqs")
        changes = []
        for arn in dict.fromkeys(queues):
            url = read_queue_url(target.clients, arn)
            target.store.remember(f"queue.{arn}", read_queue_visibility_timeout(target.clients, arn))
            sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": str(seconds)})
            changes.append(f"queue {arn.rsplit(':', 1)[-1]}: visibility timeout set to {seconds} s")
        target.store.record_fault({"kind": "queue_visibility", "seconds": seconds})
        return changes

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        arn = slot.removeprefix("queue.")
        target.clients.get("sqs").set_queue_attributes(
            QueueUrl=read_queue_url(target.clients, arn), Attributes={"VisibilityTimeout": str(original)}
        )
        return f"queue {arn.rsplit(':', 1)[-1]}: visibility timeout restored to {original} s"
