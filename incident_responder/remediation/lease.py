"""REMEDIATING: one remediation at a time per function, by a lease in the incident-state table.

Two incidents on one function must never change it at once: one's rollback would undo the other's fix.
Before applying, remediate takes the function's lease (``lease#<function_name>``, a conditional write
that succeeds when nobody holds it, this incident already does, or the holder's lease has run out);
it is released after verifying (the state machine, once REMEDIATED) or after rolling back (remediate).
A lease outlives a holder that dies by :data:`LEASE_SECONDS` at most. The item has no ``status``
attribute: the sweep scans that attribute for incidents.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from incident_responder.core.aws import AwsClients
from incident_responder.core.encoding import iso
from incident_responder.remediation.errors import FunctionLeaseHeldError
from incident_responder.state import keys

# Apply (300 s), settle and verify (120 s and the settle), roll back (300 s), with their retries: a holder
# that lives ends well inside this; one that dies frees the function when it runs out.
LEASE_SECONDS = 1800


def lease_key(function_name: str) -> dict[str, Any]:
    return {"incident_id": {"S": keys.lease(function_name)}}


def _now() -> int:
    return int(datetime.now(UTC).timestamp())


def take(clients: AwsClients, table: str, function_name: str, incident_id: str, seconds: int = LEASE_SECONDS) -> None:
    """Hold ``function_name`` for ``incident_id`` (again, for a retried task); raise if another incident holds it."""
    ddb = clients.get("dynamodb")
    now = _now()
    try:
        ddb.update_item(
            TableName=table,
            Key=lease_key(function_name),
            UpdateExpression="SET holder = :me, lease_until = :until, taken_at = :at, expires_at = :expires",
            ConditionExpression="attribute_not_exists(holder) OR holder = :me OR lease_until < :now",
            ExpressionAttributeValues={
                ":me": {"S": incident_id},
                ":until": {"N": str(now + seconds)},
                ":now": {"N": str(now)},
                ":at": {"S": iso(now)},
                ":expires": {"N": str(now + seconds + 86400)},  # DynamoDB TTL tidies an item left behind
            },
        )
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
            raise
        held = holder(clients, table, function_name) or {}
        raise FunctionLeaseHeldError(
            f"incident {held.get('holder', '?')} is remediating {function_name} (its lease runs until "
            f"{held.get('lease_until', '?')}); nothing was applied for incident {incident_id}"
        ) from None


def holder(clients: AwsClients, table: str, function_name: str) -> dict[str, str] | None:
    """Who holds the function's lease and until when, or None when nobody does."""
    item = (
        clients.get("dynamodb").get_item(TableName=table, Key=lease_key(function_name), ConsistentRead=True).get("Item")
    )
    if not item or "holder" not in item or int(item["lease_until"]["N"]) < _now():
        return None
    return {"holder": item["holder"]["S"], "lease_until": iso(int(item["lease_until"]["N"]))}


def release(clients: AwsClients, table: str, function_name: str, incident_id: str) -> bool:
    """Give the lease back if ``incident_id`` holds it; False when it did not (another took it since)."""
    try:
        clients.get("dynamodb").update_item(
            TableName=table,
            Key=lease_key(function_name),
            UpdateExpression="REMOVE holder, lease_until SET released_by = :me, released_at = :at",
            ConditionExpression="holder = :me",
            ExpressionAttributeValues={":me": {"S": incident_id}, ":at": {"S": iso(_now())}},
        )
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
            raise
        return False
    return True
