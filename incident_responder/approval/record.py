"""AWAITING_APPROVAL: the approval record (``approval#<incident_id>``): what was shown, bound to the hashed token.

The record is stored by the request, claimed once by a decision, and scanned for ``responder pending``.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import INCIDENT_ID_PATTERN
from incident_responder.state import keys as state_keys

DIGEST_PATTERN = re.compile(r"^sha256:[0-9a-f]{64}$")
_INCIDENT_ID = re.compile(INCIDENT_ID_PATTERN)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def _parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def flat(text: Any, limit: int) -> str:
    """Untrusted text on one line (control characters removed), capped; for records and headers."""
    value = re.sub(r"\s+", " ", _CONTROL.sub(" ", str(text or ""))).strip()
    return value if len(value) <= limit else value[: limit - 1] + "…"


class ApprovalRecord(BaseModel):
    """The ``approval#<incident_id>`` item: what was shown, bound to the hashed token, and its decision."""

    model_config = ConfigDict(extra="ignore")

    incident_id: str
    function_name: str
    where: str = ""  # a member account's incident: "account A, Region R" (core.members.place_of)
    token_hash: str
    link_keys: dict[str, str] = Field(default_factory=dict)  # decision -> hash of that link's key
    actions_digest: str
    actions: list[dict]
    verdicts: list[dict] = Field(default_factory=list)
    summary: str = ""
    handover: list[dict] = Field(default_factory=list)  # the proposal's hand-over steps: shown, never approved
    history: list[str] = Field(default_factory=list)  # what the function's past incidents say (memory rules)
    risk: str = ""
    created_at: str
    approval_expires_at: str
    approval_expires_epoch: int
    execution_arn: str
    used: bool = False
    decision: str | None = None
    decided_by: str | None = None
    decided_at: str | None = None
    channel: str | None = None
    reason: str | None = None
    delivery_error: str | None = None

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> ApprovalRecord:
        plain: dict[str, Any] = {}
        for key, typed in item.items():
            ((kind, value),) = typed.items()
            if kind == "N":
                plain[key] = int(float(value))
            elif kind == "S" and key.endswith("_json"):
                plain[key.removesuffix("_json")] = json.loads(value)
            else:
                plain[key] = value
        plain["incident_id"] = state_keys.incident_of_approval(str(plain["incident_id"]))
        return cls.model_validate(plain)

    def expired(self, now: datetime) -> bool:
        return now > _parse_iso(self.approval_expires_at)

    def verdict_for(self, execution_order: int) -> dict | None:
        return next((v for v in self.verdicts if v.get("execution_order") == execution_order), None)


def load_approval_record(clients: AwsClients, table: str, incident_id: str) -> ApprovalRecord | None:
    item = (
        clients.get("dynamodb")
        .get_item(TableName=table, Key={"incident_id": {"S": state_keys.approval(incident_id)}}, ConsistentRead=True)
        .get("Item")
    )
    return ApprovalRecord.from_item(item) if item else None


# -- pending approvals (responder pending) ---------------------------------------------------------
def pending_records(clients: AwsClients, table: str, now: datetime | None = None) -> list[ApprovalRecord]:
    """Approval records not yet decided and not expired, soonest expiry first."""
    now = now or datetime.now(UTC)
    ddb = clients.get("dynamodb")
    kwargs: dict[str, Any] = {
        "TableName": table,
        "FilterExpression": "begins_with(incident_id, :prefix) AND used = :false AND approval_expires_epoch >= :now",
        "ExpressionAttributeValues": {
            ":prefix": {"S": state_keys.APPROVAL_PREFIX},
            ":false": {"BOOL": False},
            ":now": {"N": str(int(now.timestamp()))},
        },
    }
    records: list[ApprovalRecord] = []
    while True:
        page = ddb.scan(**kwargs)
        records += [ApprovalRecord.from_item(item) for item in page.get("Items", [])]
        if "LastEvaluatedKey" not in page:
            break
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    records = [r for r in records if not r.expired(now)]
    return sorted(records, key=lambda r: r.approval_expires_at)
