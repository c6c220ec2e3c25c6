"""Where an incident's artifacts go: the full record in S3, a bounded copy in DynamoDB ``incident-context``.

The DynamoDB copy of the reasoning chain keeps the system prompt and the last three turns and stays
under 350 KB (items are capped at 400 KB); the S3 object always holds the whole chain.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from typing import Any

from incident_responder.aws import AwsClients

DEFAULT_CONTEXT_TABLE = "incident-context"
DYNAMODB_CHAIN_LIMIT = 350 * 1024
KEEP_TURNS = 3


def context_table_name() -> str:
    return os.environ.get("INCIDENT_CONTEXT_TABLE", DEFAULT_CONTEXT_TABLE)


def artifacts_bucket_name() -> str | None:
    return os.environ.get("ARTIFACTS_BUCKET")


def _size(value: Any) -> int:
    return len(json.dumps(value, default=str).encode())


def truncate_chain(chain: list[dict[str, Any]], limit: int = DYNAMODB_CHAIN_LIMIT) -> tuple[list[dict[str, Any]], bool]:
    """System prompt + the last ``KEEP_TURNS`` turns (a turn starts at a model message), under ``limit`` bytes."""
    if _size(chain) <= limit:
        return chain, False
    system = [m for m in chain[:1] if m.get("type") == "system"]
    ai_positions = [i for i, m in enumerate(chain) if m.get("type") == "ai"]
    start = ai_positions[-KEEP_TURNS] if len(ai_positions) >= KEEP_TURNS else len(system)
    kept = system + chain[max(start, len(system)) :]
    cut = 20_000
    while _size(kept) > limit and cut >= 200:
        kept = [_cut_content(m, cut) for m in kept]
        cut //= 2
    return kept, True


def _cut_content(message: dict[str, Any], limit: int) -> dict[str, Any]:
    data = dict(message.get("data", {}))
    content = data.get("content")
    if isinstance(content, str) and len(content) > limit:
        data["content"] = content[:limit] + f"... [cut: {len(content) - limit} chars; full chain in S3]"
    return {**message, "data": data}


def save_record(
    clients: AwsClients,
    incident_id: str,
    record: str,
    summary: dict[str, Any],
    chain: list[dict[str, Any]],
    full: dict[str, Any],
) -> dict[str, str | None]:
    """Store one stage's record (e.g. ``investigation``); returns where it went."""
    created = datetime.now(UTC).isoformat(timespec="seconds")
    s3_uri = None
    bucket = artifacts_bucket_name()
    if bucket:
        key = f"incidents/{incident_id}/{record}.json"
        body = json.dumps({**full, "reasoning_chain": chain, "created_at": created}, default=str).encode()
        clients.get("s3").put_object(Bucket=bucket, Key=key, Body=body, ContentType="application/json")
        s3_uri = f"s3://{bucket}/{key}"
    kept, truncated = truncate_chain(chain)
    clients.get("dynamodb").put_item(
        TableName=context_table_name(),
        Item={
            "incident_id": {"S": incident_id},
            "record": {"S": record},
            "created_at": {"S": created},
            "summary": {"S": json.dumps(summary, default=str)},
            "reasoning_chain": {"S": json.dumps(kept, default=str)},
            "truncated": {"BOOL": truncated},
            **({"artifact_uri": {"S": s3_uri}} if s3_uri else {}),
        },
    )
    return {"table": context_table_name(), "artifact_uri": s3_uri}


def load_record(clients: AwsClients, incident_id: str, record: str) -> dict[str, Any] | None:
    item = (
        clients.get("dynamodb")
        .get_item(TableName=context_table_name(), Key={"incident_id": {"S": incident_id}, "record": {"S": record}})
        .get("Item")
    )
    if not item:
        return None
    return {
        "incident_id": item["incident_id"]["S"],
        "record": item["record"]["S"],
        "created_at": item["created_at"]["S"],
        "summary": json.loads(item["summary"]["S"]),
        "reasoning_chain": json.loads(item["reasoning_chain"]["S"]),
        "truncated": item["truncated"]["BOOL"],
        "artifact_uri": item.get("artifact_uri", {}).get("S"),
    }
