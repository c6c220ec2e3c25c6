"""EMULATING the queue consumer: moto's SQS stops invoking mapped functions itself; the lab's workloads poll."""

from __future__ import annotations

from typing import Any


def take_over_queue_polling() -> None:
    """Stop moto invoking a queue's mapped function itself: it does so the moment a message arrives, with
    its echo backend, and deletes the message. The lab's workloads poll instead (QueueConsumer), honouring
    the mapping's state and the role's permissions. Effective where moto serves the lab (this process);
    elsewhere harmless."""
    try:
        from moto.sqs.models import Queue
    except ImportError:
        return
    if isinstance(Queue.__dict__.get("lambda_event_source_mappings"), property):
        return

    class _Registered(dict):
        """Still the registry moto's Lambda writes to; shows its poll-on-send nothing to invoke."""

        def items(self):  # type: ignore[override]
            return {}.items()

    def get(queue: Any) -> dict[str, Any]:
        value = queue.__dict__.get("lambda_event_source_mappings")
        if not isinstance(value, _Registered):
            value = _Registered(value or {})
            queue.__dict__["lambda_event_source_mappings"] = value
        return value

    def set_(queue: Any, value: dict[str, Any]) -> None:
        queue.__dict__["lambda_event_source_mappings"] = _Registered(value)

    Queue.lambda_event_source_mappings = property(get, set_)  # type: ignore[attr-defined]


def _retention_from_the_queue() -> None:
    """moto checks each message it receives against the queue's retention period by computing every attribute of
    the queue, which counts its messages: each ReceiveMessage costs as many passes over the queue as it returns
    messages. The period is read from the queue itself (the value GetQueueAttributes reports)."""
    from moto.core.utils import unix_time
    from moto.sqs.models import SQSBackend

    if getattr(SQSBackend.is_message_valid_based_on_retention_period, "_lab_direct", False):
        return

    def is_message_valid_based_on_retention_period(self: Any, queue_name: str, message: Any) -> bool:
        retention_period = int(self.get_queue(queue_name).message_retention_period)
        return retention_period + message.sent_timestamp / 1000 > unix_time()

    is_message_valid_based_on_retention_period._lab_direct = True  # type: ignore[attr-defined]
    SQSBackend.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period  # type: ignore[method-assign]
