"""An agent's transcript within a byte budget: what of it a DynamoDB item keeps (the S3 object keeps it whole).

The entries are the ones :mod:`incident_responder.agent.transcript` writes (small dicts with a ``kind``); this
module only shortens them, so the store, which sits below the agents, needs nothing of theirs.
"""

from __future__ import annotations

import json
from typing import Any

from incident_responder.core.encoding import compact_json


def size(entries: Any) -> int:
    return len(json.dumps(entries, default=str).encode())


def bound(entries: list[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], bool]:
    """``entries`` within ``limit`` bytes of JSON, and whether anything was cut: first the results, texts and
    arguments cut shorter (each marked), then the middle of the run left out (an ``omitted`` entry says how many),
    keeping its start and its end."""
    if size(entries) <= limit:
        return entries, False
    kept = entries
    for keep in (500, 200, 60):
        kept = [_shorter(e, keep) for e in kept]
        if size(kept) <= limit:
            return kept, True
    head, tail = kept[:2], kept[2:]
    while tail and size([*head, {"kind": "omitted", "entries": len(kept) - len(head) - len(tail)}, *tail]) > limit:
        tail = tail[1:]
    left_out = len(kept) - len(head) - len(tail)
    result = [*head, {"kind": "omitted", "entries": left_out}, *tail] if left_out else [*head, *tail]
    while result and size(result) > limit:
        result = result[1:]
    return result, True


def _shorter(entry: dict[str, Any], limit: int) -> dict[str, Any]:
    shorter = dict(entry)
    for key in ("result", "text", "error", "problem"):
        value = shorter.get(key)
        if isinstance(value, str) and len(value) > limit + 60:
            shorter[key] = value[:limit] + "… [cut to fit the table; whole in S3]"
    for key in ("arguments",):
        if key in shorter and size(shorter[key]) > limit + 60:
            shorter[key] = compact_json(shorter[key])[:limit] + "… [cut to fit the table; whole in S3]"
    if shorter.get("tool_calls"):
        shorter["tool_calls"] = [_shorter(c, limit) for c in shorter["tool_calls"]]
    return shorter
