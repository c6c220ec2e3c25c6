"""SERVING the lab's DynamoDB: conditional writes applied one at a time, as atomically as DynamoDB applies them."""

from __future__ import annotations

import threading
from typing import Any

from incident_responder.lab.changes import LAB_CHANGES

_DYNAMODB_WRITES = threading.RLock()


def _serialize_dynamodb_writes() -> None:
    """DynamoDB applies a conditional write atomically; moto checks the condition and writes without a lock, so
    two concurrent requests can both pass it. The responder relies on that atomicity (one approval click
    decides, one alert of a group starts the execution): the lab's server applies writes one at a time."""
    from moto.dynamodb.models import DynamoDBBackend

    for name in ("put_item", "update_item", "delete_item", "transact_write_items"):
        method = getattr(DynamoDBBackend, name)
        if getattr(method, "_lab_serialized", False):
            continue

        def serialized(*args: Any, _method: Any = method, **kwargs: Any) -> Any:
            try:
                with _DYNAMODB_WRITES:
                    return _method(*args, **kwargs)
            finally:
                LAB_CHANGES.bump("table")  # waiters on an incident's status look again

        serialized._lab_serialized = True  # type: ignore[attr-defined]
        setattr(DynamoDBBackend, name, serialized)
