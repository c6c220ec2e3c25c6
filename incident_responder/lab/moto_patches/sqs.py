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
