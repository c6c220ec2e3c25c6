"""dead_letter_delivery_failed: the function's dead-letter queue setting names a queue that is not there, so
Lambda cannot deliver the events it gives up (catalogue entry dead-letter-delivery-failed)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


class DeadLetterDeliveryFailed(KindParameters):
    """DeadLetterConfig.TargetArn set to this queue of the function's account and Region (one retired, say)."""

    kind: Literal["dead_letter_delivery_failed"]
    queue: str = Field(default="failed-events-retired", pattern=r"^[A-Za-z0-9_-]{1,80}$")


class DeadLetterDeliveryFailedKind(ChaosKind[DeadLetterDeliveryFailed]):
    """Point the function's dead-letter queue at a queue it cannot send to."""

    parameters = DeadLetterDeliveryFailed
    fault_type = FaultType.DEAD_LETTER_MISCONFIGURED
    workloads = frozenset({DATA_PROCESSOR})  # the one invoked asynchronously, with a dead-letter queue
    refusal = "has no dead-letter queue"
    slots = ("dead_letter_target",)
    help = "point the dead-letter queue setting at a queue the function cannot send to"
    defaults = {"queue": "failed-events-retired"}
    argument_help = {"queue": "the queue's name, in the function's account and Region (default: failed-events-retired)"}
    example = {"queue": "failed-events-retired"}

    def inject(self, target: FaultTarget, params: DeadLetterDeliveryFailed) -> list[str]:
        config = target.config()
        before = (config.get("DeadLetterConfig") or {}).get("TargetArn")
        if not before:
            raise ChaosError(f"{target.function_name} has no dead-letter queue: there is no setting to change")
        arn = f"arn:{before.split(':')[1]}:sqs:{before.split(':')[3]}:{before.split(':')[4]}:{params.queue}"
        if arn == before:
            raise ChaosError(f"{params.queue} is already the dead-letter queue of {target.function_name}")
        target.store.remember("dead_letter_target", before)
        target.update_config(DeadLetterConfig={"TargetArn": arn})
        target.store.record_fault({"kind": "dead_letter_delivery_failed", "queue": params.queue})
        return [f"dead-letter queue set to {arn} (was {before})"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        target.update_config(DeadLetterConfig={"TargetArn": original})
        return f"dead-letter queue restored to {original}"
