"""REMEDIATING and ROLLING_BACK: leases per resource, each with a fencing token, in the incident-state table.

Two incidents must never change one resource at once, nor undo each other's verified change. Each action
names the resources it changes (:meth:`incident_responder.actions.change._Change.resources`: a role,
a key, a secret, a queue, a mapping, a security group, a network ACL, an alias, a function's configuration).
Before its first write, remediate takes the lease of every one (``lease#<resource>``), in one fixed order
(sorted: two incidents never each hold what the other waits for), and raises
:class:`~incident_responder.remediation.errors.ResourceLeaseHeldError` before writing anything while another
incident holds one; the state machine waits, then hands over.

**A lease never lapses under a live holder.** It is tied to the holder's execution: another incident takes it
only once the holder's execution has ended (``DescribeExecution``; an answer that cannot be had counts as
running), whatever ``lease_until`` says. A holder without an execution (the command line, a test) loses it
at ``lease_until``. Every write renews it.

**Fencing.** Each lease item carries ``fence``, a version raised every time the lease passes to another
incident; the holder's token is the fence it took. Every write checks, just before it, that the holder
still holds the lease with its token; the ledger keeps the token of each step it applied; an undo takes the
resource again only while its fence is still that token. An undo older than the resource's latest holder
is refused (:class:`FencedError`) and the operators are alarmed: it is never applied, because the live
value it would compare may be a newer incident's verified fix that equals its own.

Released at every end: after verifying (remediate's ``release``), after rolling back, and when an
execution ends without either (reconcile's :mod:`incident_responder.remediation.handover`). The items have no
``status`` attribute: the sweep scans that attribute for incidents.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from incident_responder.core.aws import AwsClients
from incident_responder.core.encoding import iso
from incident_responder.remediation.errors import ResourceLeaseHeldError
from incident_responder.state import keys

# Apply (300 s), settle and verify (120 s and the settle), roll back (300 s), with their retries: a holder
# that lives ends well inside this; one without an execution that dies frees its resources when it runs out.
LEASE_SECONDS = 1800


class FencedError(RuntimeError):
    """The resource's lease passed to another incident after this incident's token: its write or undo is refused."""

    def __init__(self, resource: str, token: int, fence: int | None, holder: str | None):
        self.resource, self.token, self.fence, self.holder = resource, token, fence, holder
        newer = f"incident {holder}" if holder else "a newer holder"
        super().__init__(
            f"{resource} passed to {newer} (fencing token {fence}) after this incident's write (token {token}): "
            "refused, left as it is"
        )


def lease_key(resource: str) -> dict[str, Any]:
    return {"incident_id": {"S": keys.lease(resource)}}


def _now() -> int:
    return int(datetime.now(UTC).timestamp())


def _failed_condition(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


def _item(clients: AwsClients, table: str, resource: str) -> dict[str, Any]:
    return (
        clients.get("dynamodb").get_item(TableName=table, Key=lease_key(resource), ConsistentRead=True).get("Item")
        or {}
    )


def execution_running(clients: AwsClients, execution_arn: str) -> bool:
    """Is the execution still running? Unknown (no permission, Step Functions unreachable) counts as running."""
    try:
        status = clients.get("stepfunctions").describe_execution(executionArn=execution_arn)["status"]
    except ClientError as exc:
        return exc.response.get("Error", {}).get("Code") != "ExecutionDoesNotExist"
    except BotoCoreError:  # an endpoint out of reach: never hand a live holder's lease away
        return True
    return status in ("RUNNING", "PENDING_REDRIVE")


def _live(clients: AwsClients, item: dict[str, Any]) -> bool:
    """Does the item's holder still hold it: its execution runs, or (none recorded) its lease has not run out."""
    if "holder" not in item:
        return False
    if "holder_execution" in item:
        return execution_running(clients, item["holder_execution"]["S"])
    return int(item["lease_until"]["N"]) >= _now()


def take(
    clients: AwsClients,
    table: str,
    resource: str,
    incident_id: str,
    execution_arn: str | None = None,
    seconds: int = LEASE_SECONDS,
) -> tuple[int, bool]:
    """Hold ``resource`` for ``incident_id``; its fencing token, and whether this call took it (False: it held it
    already, a retried task). Raises :class:`ResourceLeaseHeldError` while a live holder has it."""
    ddb = clients.get("dynamodb")
    now = _now()
    values: dict[str, Any] = {
        ":me": {"S": incident_id},
        ":until": {"N": str(now + seconds)},
        ":at": {"S": iso(now)},
        ":expires": {"N": str(now + seconds + 86400)},  # DynamoDB TTL tidies an item left behind
    }
    sets = "holder = :me, lease_until = :until, taken_at = :at, expires_at = :expires"
    if execution_arn:
        values[":execution"] = {"S": execution_arn}
        sets += ", holder_execution = :execution"
    item: dict[str, Any] = {}
    for _ in range(3):  # the item may change between reading it and the conditional write: read again
        item = _item(clients, table, resource)
        held_by = item.get("holder", {}).get("S")
        try:
            if held_by == incident_id:  # a retried task: renew, keep the token
                ddb.update_item(
                    TableName=table,
                    Key=lease_key(resource),
                    UpdateExpression="SET lease_until = :until",
                    ConditionExpression="holder = :me",
                    ExpressionAttributeValues={":me": values[":me"], ":until": values[":until"]},
                )
                return int(item["fence"]["N"]), False
            if held_by is not None and _live(clients, item):
                break
            remove = "" if execution_arn else " REMOVE holder_execution"
            # Taken over from a holder that is gone: only if nobody else took it over first.
            condition, extra = "attribute_not_exists(holder)", {}
            if held_by is not None:
                condition, extra = (
                    "holder = :old AND lease_until = :old_until",
                    {
                        ":old": item["holder"],
                        ":old_until": item["lease_until"],
                    },
                )
            out = ddb.update_item(
                TableName=table,
                Key=lease_key(resource),
                UpdateExpression=f"SET {sets}, fence = if_not_exists(fence, :zero) + :one{remove}",
                ConditionExpression=condition,
                ExpressionAttributeValues={**values, **extra, ":zero": {"N": "0"}, ":one": {"N": "1"}},
                ReturnValues="UPDATED_NEW",
            )
            return int(out["Attributes"]["fence"]["N"]), True
        except ClientError as exc:
            if not _failed_condition(exc):
                raise
    # The holder as last read (the loop breaks on a live one; three lost races in a row also end here).
    held_by, until = item.get("holder", {}).get("S", "?"), item.get("lease_until", {}).get("N")
    raise ResourceLeaseHeldError(
        f"incident {held_by} is remediating {resource} (its lease runs until {iso(int(until)) if until else '?'}, "
        f"and while its execution runs); nothing was applied for incident {incident_id}"
    )


def take_all(
    clients: AwsClients,
    table: str,
    resources: Iterable[str],
    incident_id: str,
    execution_arn: str | None = None,
    seconds: int = LEASE_SECONDS,
) -> dict[str, int]:
    """Hold every resource, in sorted order; their tokens. On a held one, what this call took is given back
    before :class:`ResourceLeaseHeldError` is raised: nothing is held while waiting, and nothing was written."""
    tokens: dict[str, int] = {}
    taken: list[str] = []
    try:
        for resource in sorted(set(resources)):
            tokens[resource], new = take(clients, table, resource, incident_id, execution_arn, seconds)
            if new:
                taken.append(resource)
    except ResourceLeaseHeldError:
        release_all(clients, table, taken, incident_id)
        raise
    return tokens


def check(clients: AwsClients, table: str, resource: str, incident_id: str, token: int) -> None:
    """Just before a write: the incident still holds ``resource`` with ``token`` (renewed); else :class:`FencedError`."""
    _fenced(clients, table, resource, token, "SET lease_until = :until", "holder = :me", {":me": {"S": incident_id}})


def take_for_undo(
    clients: AwsClients, table: str, resource: str, incident_id: str, token: int, execution_arn: str | None = None
) -> None:
    """Hold ``resource`` again to undo this incident's write, only while its fence is still ``token`` (nobody took it
    since; a holder is this incident or none); else :class:`FencedError`."""
    values: dict[str, Any] = {":me": {"S": incident_id}}
    update = "SET holder = :me, lease_until = :until"
    if execution_arn:
        update += ", holder_execution = :execution"
        values[":execution"] = {"S": execution_arn}
    _fenced(clients, table, resource, token, update, "(attribute_not_exists(holder) OR holder = :me)", values)


def _fenced(
    clients: AwsClients, table: str, resource: str, token: int, update: str, condition: str, values: dict[str, Any]
) -> None:
    """``update`` the lease item only while its fence is ``token`` and ``condition`` holds; else :class:`FencedError`."""
    try:
        clients.get("dynamodb").update_item(
            TableName=table,
            Key=lease_key(resource),
            UpdateExpression=update,
            ConditionExpression=f"fence = :token AND {condition}",
            ExpressionAttributeValues={
                **values,
                ":token": {"N": str(token)},
                ":until": {"N": str(_now() + LEASE_SECONDS)},
            },
        )
    except ClientError as exc:
        if not _failed_condition(exc):
            raise
        item = _item(clients, table, resource)
        raise FencedError(
            resource, token, int(item["fence"]["N"]) if "fence" in item else None, item.get("holder", {}).get("S")
        ) from None


def holder(clients: AwsClients, table: str, resource: str) -> dict[str, Any] | None:
    """Who holds the resource's lease, until when and its fence, or None when nobody live does."""
    item = _item(clients, table, resource)
    if not _live(clients, item):
        return None
    return {
        "holder": item["holder"]["S"],
        "lease_until": iso(int(item["lease_until"]["N"])),
        "fence": int(item["fence"]["N"]),
        "execution": item.get("holder_execution", {}).get("S"),
    }


def fence(clients: AwsClients, table: str, resource: str) -> int:
    """The resource's latest fencing token (0: never leased)."""
    item = _item(clients, table, resource)
    return int(item["fence"]["N"]) if "fence" in item else 0


def release(clients: AwsClients, table: str, resource: str, incident_id: str) -> bool:
    """Give the lease back if ``incident_id`` holds it; False when it did not (another took it since). The fence
    stays: only a new holder raises it."""
    try:
        clients.get("dynamodb").update_item(
            TableName=table,
            Key=lease_key(resource),
            UpdateExpression="REMOVE holder, lease_until, holder_execution SET released_by = :me, released_at = :at",
            ConditionExpression="holder = :me",
            ExpressionAttributeValues={":me": {"S": incident_id}, ":at": {"S": iso(_now())}},
        )
    except ClientError as exc:
        if not _failed_condition(exc):
            raise
        return False
    return True


def release_all(clients: AwsClients, table: str, resources: Iterable[str], incident_id: str) -> list[str]:
    """Give back every one of ``resources`` this incident holds; those it did."""
    return [r for r in sorted(set(resources)) if release(clients, table, r, incident_id)]
