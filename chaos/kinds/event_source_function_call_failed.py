"""event_source_function_call_failed: a message the function's code cannot process waits in its queue, so every
batch that carries it fails (catalogue entry event-source-function-call-failed)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chaos.errors import ChaosError
from chaos.kinds.base import QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType

POISON = '{"order_id": "o-malformed"}'  # an order without its items: the consumer's code cannot total it


class EventSourceFunctionCallFailed(KindParameters):
    """A producer sends messages the function's code fails on (by default an order without items)."""

    kind: Literal["event_source_function_call_failed"]
    body: str = Field(default=POISON, min_length=1, max_length=1024)
    count: int = Field(default=1, ge=1, le=10)


class EventSourceFunctionCallFailedKind(ChaosKind[EventSourceFunctionCallFailed]):
    """Send the function's queue messages its code cannot process: the batches carrying them keep failing."""

    parameters = EventSourceFunctionCallFailed
    fault_type = FaultType.EVENT_SOURCE_FAILING
    workloads = frozenset({QUEUE_CONSUMER})
    refusal = "no SQS event source mapping"
    slots = ("poison",)  # poison.<queue url>: the body sent (restore deletes what it can receive of it)
    help = "send the function's queue messages its code cannot process (a poison message)"
    defaults = {"body": POISON, "count": 1}
    argument_help = {
        "body": f"the message body (default: {POISON}, an order without items)",
        "count": "how many such messages (default: 1)",
    }
    example = {"body": '{"order_id": "o-1"}', "count": 2}

    def inject(self, target: FaultTarget, params: EventSourceFunctionCallFailed) -> list[str]:
        sources = target.sqs_sources()
        if not sources:
            raise ChaosError(f"{target.function_name} has no SQS event source mapping: no queue invokes it")
        sqs = target.clients.get("sqs")
        _, _, _, _, owner, name = sources[0].split(":")
        url = sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=owner)["QueueUrl"]
        slot = f"poison.{url}"
        if slot in target.store.slots:
            return [f"{url} already has the messages"]
        target.store.remember(slot, params.body)
        for _ in range(params.count):
            sqs.send_message(QueueUrl=url, MessageBody=params.body)
        target.store.record_fault({"kind": "event_source_function_call_failed", "count": params.count})
        return [f"sent {params.count} message(s) the function cannot process to {url}"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        url = slot.removeprefix("poison.")
        sqs = target.clients.get("sqs")
        deleted = 0
        for _ in range(10):
            messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
            if not messages:
                break
            for message in messages:
                if message.get("Body") == original:
                    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
                    deleted += 1
                else:  # another producer's message: visible again at once
                    sqs.change_message_visibility(
                        QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                    )
        return (
            f"deleted {deleted} such message(s) from {url} (any still in flight return after the queue's visibility "
            "timeout, and its redrive policy moves them to its dead-letter queue)"
        )
