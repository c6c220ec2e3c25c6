"""Every lifecycle state: how a time and a value are written down, the same way wherever they are stored or compared.

A time is ISO 8601 in UTC with a ``Z`` (``2026-11-23T17:05:00Z``), to the second unless a finer ``timespec`` is
asked for (log events and CloudTrail times keep their milliseconds). A value compared with another (a ledger's prior
state with the live one, a baseline with the configuration now) is compared as its canonical JSON: keys sorted,
no spaces, so equal values give equal text.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any


def iso(moment: datetime | float, timespec: str = "seconds") -> str:
    """``moment`` (a datetime, or epoch seconds) as ISO 8601 UTC: ``2026-11-23T17:05:00Z``.

    >>> iso(datetime(2026, 11, 23, 17, 5, 0, 123456, tzinfo=UTC)), iso(1795655598.5, "milliseconds")
    ('2026-11-23T17:05:00Z', '2026-11-26T01:13:18.500Z')
    """
    when = moment if isinstance(moment, datetime) else datetime.fromtimestamp(moment, UTC)
    return when.astimezone(UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


def read_time(value: Any, *, naive_is_utc: bool = False) -> datetime | None:
    """A stored time (``...Z``, ``...+00:00``, or ``...+0000`` as Step Functions and some AWS APIs write it) as an
    aware datetime; None when it is not one, or names no zone (its meaning would be a guess) unless ``naive_is_utc``.

    >>> read_time("2026-11-23T17:05:00.5+0000") == read_time("2026-11-23T17:05:00.500Z"), read_time("17:05")
    (True, None)
    """
    text = str(value or "")
    if text.endswith("+0000"):
        text = text[:-5] + "+00:00"
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return when.replace(tzinfo=UTC) if naive_is_utc else None
    return when


def compact_json(data: Any) -> str:
    """JSON as the model reads it: no indentation or spaces between tokens (they only cost tokens)."""
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def canonical(value: Any, *, unordered: bool = False) -> str:
    """``value`` as canonical JSON: equal values, equal text. ``unordered``: a list is compared as a set of its
    items (AWS does not promise the order of, say, a policy's statements), and so is each list in it.

    >>> canonical({"b": [2, 1], "a": None}), canonical([2, 1], unordered=True) == canonical([1, 2], unordered=True)
    ('{"a":null,"b":[2,1]}', True)
    """
    if unordered and isinstance(value, list):
        return canonical(sorted(canonical(v, unordered=True) for v in value))
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
