"""REMEDIATING and ROLLING_BACK: the undo ledger, what is recorded to undo each step of a remediation.

Before each action remediate records the exact prior state the action is about to change
(``remediation#<incident_id>#<execution_order>`` in the incident-state table, written once, conditionally:
:func:`incident_responder.state.keys.ledger_step`), then how far the step got (``progress``) and what it
left (``after``). A head item (``remediation#<incident_id>``) lists the steps, so a rollback finds them
without a scan. No ledger item has a ``status`` attribute: the sweep scans that attribute for incidents.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from botocore.exceptions import ClientError
from pydantic import BaseModel

from incident_responder.actions.change import _code, _now
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import ApprovalDecision, RemediationAction
from incident_responder.core.encoding import iso
from incident_responder.remediation.errors import LedgerConflictError
from incident_responder.state import keys

# recorded: the prior state is kept, the change may or may not have happened; applied: it happened and
# ``after`` is what it left; failed: the API refused and the live state is still the prior one.
Progress = Literal["recorded", "applied", "failed", "undone", "undo_failed"]


class LedgerEntry(BaseModel):
    execution_order: int
    action: RemediationAction
    prior: dict[str, Any]
    progress: Progress
    after: dict[str, Any] | None = None  # the live state this step left, read right after it ran
    recorded_at: str
    applied_at: str | None = None
    undone_at: str | None = None
    error: str | None = None
    # The fencing token of each resource the step changes, as held when it wrote (remediation.lease): its undo
    # goes ahead only while each is still the resource's latest.
    fences: dict[str, int] = {}


# -- the ledger ---------------------------------------------------------------------------------------
class Ledger:
    """The undo ledger of one incident in the incident-state table."""

    def __init__(self, clients: AwsClients, table: str, incident_id: str, ttl_days: int = 7):
        self.ddb = clients.get("dynamodb")
        self.table = table
        self.incident_id = incident_id
        self.ttl_days = ttl_days

    def head_key(self) -> dict[str, Any]:
        return {"incident_id": {"S": keys.ledger_head(self.incident_id)}}

    def key(self, order: int) -> dict[str, Any]:
        return {"incident_id": {"S": keys.ledger_step(self.incident_id, order)}}

    def _expires_at(self) -> dict[str, str]:
        return {"N": str(int(_now().timestamp()) + self.ttl_days * 86400)}

    def open(self, digest: str, orders: list[int], approval: ApprovalDecision, resources: list[str]) -> None:
        """Write the head item once; a retry with the same actions reuses it, other actions conflict.
        ``resources``: what the actions change, leased (released from here at every end)."""
        item = {
            **self.head_key(),
            "actions_digest": {"S": digest},
            "execution_orders": {"L": [{"N": str(o)} for o in orders]},
            "resources": {"L": [{"S": r} for r in resources]},
            "approved_by": {"S": approval.decided_by},
            "approval_channel": {"S": approval.channel},
            "created_at": {"S": iso(_now())},
            "expires_at": self._expires_at(),
        }
        try:
            self.ddb.put_item(TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(incident_id)")
        except ClientError as exc:
            if _code(exc) != "ConditionalCheckFailedException":
                raise
            head = self.head()
            if head is None or head["actions_digest"] != digest:
                raise LedgerConflictError(
                    f"incident {self.incident_id} already has remediation ledger for other actions "
                    f"({head and head['actions_digest']}); refusing to apply {digest}"
                ) from None

    def head(self) -> dict[str, Any] | None:
        item = self.ddb.get_item(TableName=self.table, Key=self.head_key(), ConsistentRead=True).get("Item")
        if not item:
            return None
        return {
            "actions_digest": item["actions_digest"]["S"],
            "execution_orders": [int(o["N"]) for o in item.get("execution_orders", {}).get("L", [])],
            "resources": [r["S"] for r in item.get("resources", {}).get("L", [])],
        }

    def get(self, order: int) -> LedgerEntry | None:
        item = self.ddb.get_item(TableName=self.table, Key=self.key(order), ConsistentRead=True).get("Item")
        if not item:
            return None
        text = {k: v["S"] for k, v in item.items() if "S" in v}
        return LedgerEntry(
            execution_order=order,
            action=RemediationAction.model_validate_json(text["action_json"]),
            prior=json.loads(text["prior_json"]),
            progress=text["progress"],
            after=json.loads(text["after_json"]) if "after_json" in text else None,
            recorded_at=text["recorded_at"],
            applied_at=text.get("applied_at"),
            undone_at=text.get("undone_at"),
            error=text.get("error"),
            fences=json.loads(text.get("fences_json", "{}")),
        )

    def entries(self, head: dict[str, Any] | None = None) -> list[LedgerEntry]:
        """Every step the head lists (``head``: already read, else read now); none without a head."""
        head = head if head is not None else self.head()
        if head is None:
            return []
        return [e for e in (self.get(o) for o in head["execution_orders"]) if e is not None]

    def record(self, action: RemediationAction, prior: dict[str, Any], fences: dict[str, int]) -> LedgerEntry:
        """Record the prior state once; if a concurrent attempt recorded first, its record stands."""
        recorded_at = iso(_now())
        item = {
            **self.key(action.execution_order),
            "action_json": {"S": action.model_dump_json()},
            "prior_json": {"S": json.dumps(prior, sort_keys=True)},
            "fences_json": {"S": json.dumps(fences, sort_keys=True)},
            "progress": {"S": "recorded"},
            "recorded_at": {"S": recorded_at},
            "expires_at": self._expires_at(),
        }
        try:
            self.ddb.put_item(TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(incident_id)")
        except ClientError as exc:
            if _code(exc) != "ConditionalCheckFailedException":
                raise
            existing = self.get(action.execution_order)
            if existing is not None:
                return existing
            raise
        return LedgerEntry(
            execution_order=action.execution_order,
            action=action,
            prior=prior,
            progress="recorded",
            recorded_at=recorded_at,
            fences=fences,
        )

    def mark(
        self,
        order: int,
        progress: Progress,
        *,
        error: str | None = None,
        after: dict[str, Any] | None = None,
        fences: dict[str, int] | None = None,
    ) -> None:
        stamp = {"applied": "applied_at", "undone": "undone_at"}.get(progress)
        sets = ["progress = :progress"]
        values: dict[str, Any] = {":progress": {"S": progress}}
        if stamp:
            sets.append(f"{stamp} = :at")
            values[":at"] = {"S": iso(_now())}
        if after is not None:
            sets.append("after_json = :after")
            values[":after"] = {"S": json.dumps(after, sort_keys=True)}
        if fences is not None:
            sets.append("fences_json = :fences")
            values[":fences"] = {"S": json.dumps(fences, sort_keys=True)}
        if error is not None:
            sets.append("#error = :error")
            values[":error"] = {"S": error[:1000]}
        update = "SET " + ", ".join(sets) + ("" if error is not None else " REMOVE #error")
        self.ddb.update_item(
            TableName=self.table,
            Key=self.key(order),
            UpdateExpression=update,
            ConditionExpression="attribute_exists(incident_id)",
            ExpressionAttributeNames={"#error": "error"},
            ExpressionAttributeValues=values,
        )

    def note_error(self, order: int, error: str, after: dict[str, Any] | None = None) -> None:
        """The step's progress stays as it was (its change may have happened); the error is kept, and what
        the step left when it could be read."""
        sets, values = ["#error = :error"], {":error": {"S": error[:1000]}}
        if after is not None:
            sets.append("after_json = :after")
            values[":after"] = {"S": json.dumps(after, sort_keys=True)}
        self.ddb.update_item(
            TableName=self.table,
            Key=self.key(order),
            UpdateExpression="SET " + ", ".join(sets),
            ConditionExpression="attribute_exists(incident_id)",
            ExpressionAttributeNames={"#error": "error"},
            ExpressionAttributeValues=values,
        )

    def note_rollback(self, reason: str) -> None:
        self.ddb.update_item(
            TableName=self.table,
            Key=self.head_key(),
            UpdateExpression="SET rollback_reason = :reason, rollback_at = :at",
            ExpressionAttributeValues={":reason": {"S": (reason or "")[:1000]}, ":at": {"S": iso(_now())}},
        )
