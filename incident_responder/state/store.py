"""Where an incident's artifacts go: the full record in S3, a bounded copy in DynamoDB ``incident-context``.

A DynamoDB item is capped at 400 KB counting every attribute (names included), so the copy is sized
as a whole: the summary is kept whole when it fits (else it keeps its small fields and points at S3), the
agent's transcript (:mod:`incident_responder.agent.transcript`) gets its own share (:mod:`.transcripts`: results
and texts cut shorter, then the middle of the run left out, each marked), and the reasoning chain gets what is left (system
prompt + the last three turns, long contents cut). The S3 object always holds everything. Items expire with the
incident (``expires_at``, the table's TTL).

A run that raised is stored too (:meth:`RecordStore.save_failed`): outcome ``ERROR``, its counts and its
transcript up to the error, so an ERROR incident's report still shows what the agent did.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from incident_responder.core.aws import AwsClients
from incident_responder.state.transcripts import bound as bound_transcript

if TYPE_CHECKING:
    from incident_responder.core.settings import AgentSettings, StoreSettings

ITEM_LIMIT = 400 * 1024  # DynamoDB's item size limit
ITEM_BUDGET = ITEM_LIMIT - 16 * 1024  # margin for the bookkeeping attributes and size-accounting slack
TRANSCRIPT_SHARE = ITEM_BUDGET // 4  # at most this much of the item for the transcript
KEEP_TURNS = 3
SUMMARY_KEEP = ("incident_id", "outcome", "end_reason", "diagnosis_summary", "metrics", "evidence")


def _size(value: Any) -> int:
    return len(json.dumps(value, default=str).encode())


def item_size(item: dict[str, dict[str, Any]]) -> int:
    """A DynamoDB item's size as the 400 KB limit counts it: attribute names plus values (UTF-8)."""
    total = 0
    for name, value in item.items():
        total += len(name.encode())
        ((kind, raw),) = value.items()
        if kind in ("S", "N"):
            total += len(str(raw).encode())
        elif kind == "BOOL":
            total += 1
        else:
            total += _size(raw)
    return total


def truncate_chain(chain: list[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], bool]:
    """System prompt + the last ``KEEP_TURNS`` turns (a turn starts at a model message), under ``limit`` bytes."""
    if _size(chain) <= limit:
        return chain, False
    system = [m for m in chain[:1] if m.get("type") == "system"]
    ai_positions = [i for i, m in enumerate(chain) if m.get("type") == "ai"]
    start = ai_positions[-KEEP_TURNS] if len(ai_positions) >= KEEP_TURNS else len(system)
    kept = system + chain[max(start, len(system)) :]
    cut = 20_000
    while _size(kept) > limit and cut >= 100:
        kept = [_cut_content(m, cut) for m in kept]
        cut //= 2
    while _size(kept) > limit and kept:
        kept = kept[1:]  # a limit this small keeps only the newest messages
    return kept, True


def _cut_content(message: dict[str, Any], limit: int) -> dict[str, Any]:
    data = dict(message.get("data", {}))
    content = data.get("content")
    if isinstance(content, str) and len(content) > limit:
        data["content"] = content[:limit] + f"... [cut: {len(content) - limit} chars; full chain in S3]"
    return {**message, "data": data}


@dataclass(frozen=True)
class RecordStore:
    """One stage's record per incident (``investigation``, ``proposal``): DynamoDB item + S3 object."""

    table: str
    bucket: str | None = None
    ttl_days: int | None = None

    @classmethod
    def from_settings(cls, settings: StoreSettings | AgentSettings) -> RecordStore:
        """The store a function's settings name: the incident-context table, the artifacts bucket, the TTL."""
        return cls(settings.incident_context_table, settings.artifacts_bucket, settings.incident_ttl_days)

    def item(
        self,
        incident_id: str,
        record: str,
        summary: dict[str, Any],
        chain: list[dict[str, Any]],
        s3_uri: str | None,
        transcript: list[dict[str, Any]] | None = None,
    ) -> dict[str, dict[str, Any]]:
        """The DynamoDB item, whole-item size under the limit."""
        created = datetime.now(UTC).isoformat(timespec="seconds")
        item: dict[str, dict[str, Any]] = {
            "incident_id": {"S": incident_id},
            "record": {"S": record},
            "created_at": {"S": created},
            **({"artifact_uri": {"S": s3_uri}} if s3_uri else {}),
            **({"expires_at": {"N": str(int(time.time()) + self.ttl_days * 86400)}} if self.ttl_days else {}),
        }
        summary_json = json.dumps(summary, default=str)
        summary_cut = False
        if len(summary_json.encode()) > ITEM_BUDGET // 2:
            # Too large to keep whole: the small fields stay, the rest is in S3 (artifact_uri).
            summary_json = json.dumps({k: summary[k] for k in SUMMARY_KEEP if k in summary}, default=str)
            summary_cut = True
        item["summary"] = {"S": summary_json}
        item["summary_truncated"] = {"BOOL": summary_cut}
        share = min(TRANSCRIPT_SHARE, ITEM_BUDGET - item_size(item) - len("transcript_truncated") - 64)
        entries, transcript_cut = bound_transcript(transcript or [], max(0, share))
        item["transcript"] = {"S": json.dumps(entries, default=str)}
        item["transcript_truncated"] = {"BOOL": transcript_cut}
        room = ITEM_BUDGET - item_size(item) - len("reasoning_chain") - len("truncated") - 1
        kept, truncated = truncate_chain(chain, room)
        item["reasoning_chain"] = {"S": json.dumps(kept, default=str)}
        item["truncated"] = {"BOOL": truncated}
        return item

    def save(
        self,
        clients: AwsClients,
        incident_id: str,
        record: str,
        summary: dict[str, Any],
        chain: list[dict[str, Any]],
        full: dict[str, Any],
        transcript: list[dict[str, Any]] | None = None,
    ) -> dict[str, str | None]:
        """Store one stage's record; returns where it went."""
        s3_uri = None
        transcript = transcript or []
        if self.bucket:
            key = f"incidents/{incident_id}/{record}.json"
            created = datetime.now(UTC).isoformat(timespec="seconds")
            whole = {**full, "reasoning_chain": chain, "transcript": transcript, "created_at": created}
            body = json.dumps(whole, default=str).encode()
            clients.get("s3").put_object(Bucket=self.bucket, Key=key, Body=body, ContentType="application/json")
            s3_uri = f"s3://{self.bucket}/{key}"
        clients.get("dynamodb").put_item(
            TableName=self.table, Item=self.item(incident_id, record, summary, chain, s3_uri, transcript)
        )
        return {"table": self.table, "artifact_uri": s3_uri}

    def save_failed(
        self, clients: AwsClients, incident_id: str, record: str, error: BaseException, full: dict[str, Any]
    ) -> bool:
        """Store the run an agent made before ``error`` ended it (the ``agent_run`` the loop attached), as this
        stage's record with outcome ``ERROR``: its counts and transcript up to the failure. Nothing is stored for
        an error without a run (it happened before or after the agent). Never raises: a store that fails here
        must not replace the error the state machine routes on (it is logged); returns whether it was stored."""
        run = getattr(error, "agent_run", None)
        if run is None:
            return False
        usage = run.usage
        summary = {
            "incident_id": incident_id,
            "outcome": "ERROR",
            "end_reason": run.end_reason,
            "metrics": {
                "llm_calls": run.llm_calls,
                "tool_calls": run.tool_calls,
                "provider_calls": run.provider_calls,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cache_read_tokens": usage.cache_read_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
                "total_tokens": usage.total_tokens,
                "tool_output_bytes": run.tool_output_bytes,
                "latency_ms": run.latency_ms,
                "model_ms": run.model_ms,
                "tool_ms": run.tool_ms,
            },
        }
        try:
            self.save(
                clients,
                incident_id,
                record,
                summary=summary,
                chain=run.reasoning_chain(),
                full={**full, "result": summary, "tool_results": run.tool_results},
                transcript=run.transcript,
            )
        except Exception as exc:  # noqa: BLE001 - the agent's error is what the state machine must see
            import logging

            logging.getLogger(__name__).warning(
                "the %s record of a failed run was not stored: %s: %s", record, type(exc).__name__, exc
            )
            return False
        return True

    def load(self, clients: AwsClients, incident_id: str, record: str) -> dict[str, Any] | None:
        item = (
            clients.get("dynamodb")
            .get_item(TableName=self.table, Key={"incident_id": {"S": incident_id}, "record": {"S": record}})
            .get("Item")
        )
        if not item:
            return None
        return {
            "incident_id": item["incident_id"]["S"],
            "record": item["record"]["S"],
            "created_at": item["created_at"]["S"],
            "summary": json.loads(item["summary"]["S"]),
            "summary_truncated": item.get("summary_truncated", {}).get("BOOL", False),
            "reasoning_chain": json.loads(item["reasoning_chain"]["S"]),
            "truncated": item["truncated"]["BOOL"],
            "transcript": json.loads(item.get("transcript", {}).get("S") or "[]"),
            "transcript_truncated": item.get("transcript_truncated", {}).get("BOOL", False),
            "artifact_uri": item.get("artifact_uri", {}).get("S"),
        }


def read_artifact(clients: AwsClients, uri: str) -> dict[str, Any]:
    """The full record behind an ``s3://bucket/key`` reference."""
    if not uri.startswith("s3://"):
        raise ValueError(f"not an s3:// reference: {uri!r}")
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return json.loads(clients.get("s3").get_object(Bucket=bucket, Key=key)["Body"].read())


def load_record(clients: AwsClients, table: str, incident_id: str, record: str) -> dict[str, Any] | None:
    """A stored record, from the incident-context table ``table``."""
    return RecordStore(table).load(clients, incident_id, record)


def step_result(
    clients: AwsClients,
    store: RecordStore,
    incident_id: str,
    *,
    kind: str,
    field: str,
    result: dict[str, Any] | None,
    missing: type[LookupError],
) -> dict[str, Any]:
    """``field`` of an earlier step's result (the investigation's ``diagnosis``, the proposal's ``proposal``) from
    the state machine's input, or, when it travelled by reference, from the store: the DynamoDB summary when it
    is whole, else the full record in S3. Nowhere: ``missing`` (an ASL error name)."""
    if result and result.get(field):
        return result[field]
    record = store.load(clients, incident_id, kind)
    if record and record["summary"].get(field):
        return record["summary"][field]
    uri = (result or {}).get(f"{field}_ref") or (record or {}).get("artifact_uri")
    if uri and uri.startswith("s3://"):
        found = read_artifact(clients, uri).get("result", {}).get(field)
        if found:
            return found
    raise missing(f"no {field} found for incident {incident_id} (reference: {uri or 'none'})")
