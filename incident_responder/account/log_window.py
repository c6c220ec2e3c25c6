"""INVESTIGATING and VERIFYING: a window of a function's log events, summarized (errors, invocations) and folded.

Each event is read by :func:`incident_responder.account.log_records.parse_event`; here the window's errors are
grouped, the platform's START and REPORT lines summed up, and repeated lines folded into their first occurrence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from incident_responder.account.compact import Compact
from incident_responder.account.log_records import (
    _ISO,
    Category,
    EndRecord,
    ErrorRecord,
    LogRecord,
    Origin,
    ReportRecord,
    Runtime,
    StartRecord,
    parse_event,
)
from incident_responder.catalogue.queries import failure_mode_of

# -- a window of events ----------------------------------------------------------------------------
MAX_SUMMARY_MESSAGE = 300


class LogErrorSummary(Compact):
    """One kind of error in the window: events reporting the same error, from the same origin and version.

    Serialized without the fields left at their default (``handled`` false, no runtime, operation or version)."""

    error_type: str = Field(description="e.g. KeyError, TypeError, AccessDeniedException, Sandbox.Timedout")
    message: str = Field(description=f"the first occurrence's message (at most {MAX_SUMMARY_MESSAGE} characters)")
    origin: Origin = Field(description="application (the function's code), aws_service (an SDK), platform (Lambda)")
    category: Category
    runtime: Runtime | None = None
    handled: bool = Field(default=False, description="logged by the code, which carried on (not an invocation failure)")
    operation: str | None = Field(default=None, description="the AWS API operation, when the SDK names it")
    function_version: str | None = Field(default=None, description="the version that ran, from the log stream or START")
    count: int = Field(description="events reporting it (a folded event counts each of its occurrences)")
    first_event: int = Field(description="index into events")
    last_event: int = Field(description="index into events")
    failure_mode: str | None = Field(
        default=None, description="the AWS failure catalogue entry that prints this error (its id), when one does"
    )


class InvocationSummary(Compact):
    """What the platform's START and REPORT lines in the window say about the invocations.

    Serialized without the fields that are unset (no figure, no version, no status)."""

    reports: int = 0
    versions: list[str] = Field(default_factory=list, description="function versions that started (START lines)")
    max_duration_ms: float | None = None
    memory_size_mb: int | None = None
    max_memory_used_mb: int | None = None
    max_init_duration_ms: float | None = Field(default=None, description="the longest cold start (Init Duration)")
    timed_out: int = Field(default=0, description="REPORT lines with Status: timeout")
    at_memory_limit: int = Field(default=0, description="REPORT lines whose Max Memory Used reached the Memory Size")
    statuses: dict[str, int] = Field(
        default_factory=dict, description="REPORT lines by Status (newer runtimes: success, error, timeout)"
    )
    error_types: dict[str, int] = Field(
        default_factory=dict, description="REPORT lines by Error Type (e.g. Runtime.OutOfMemory)"
    )


def stream_version(stream_name: str | None) -> str | None:
    """The version in a Lambda log stream's name: ``2026/11/23/[3]0123abcd`` -> ``3``."""
    if not stream_name:
        return None
    m = re.search(r"/\[([^\]]+)\]", stream_name)
    return m.group(1) if m else None


def _read(messages: Sequence[str], streams: Sequence[str | None] | None) -> list[tuple[LogRecord | None, str | None]]:
    """Each event's record, and the version that wrote it (its stream's name, or the stream's latest START)."""
    streams = list(streams) if streams is not None else [None] * len(messages)
    started: dict[str | None, str | None] = {}  # stream -> the version its latest START names
    read = []
    for message, stream in zip(messages, streams, strict=True):
        record = parse_event(message)
        if isinstance(record, StartRecord):
            started[stream] = record.version
        read.append((record, stream_version(stream) or started.get(stream)))
    return read


def _summaries(
    read: Sequence[tuple[LogRecord | None, str | None]], positions: Sequence[int]
) -> tuple[list[LogErrorSummary], InvocationSummary]:
    """The errors (grouped, in order of first appearance; ``positions``: where each event is reported) and the
    invocations' figures."""
    groups: dict[tuple[Any, ...], LogErrorSummary] = {}
    invocations = InvocationSummary()
    for (record, version), position in zip(read, positions, strict=True):
        if isinstance(record, StartRecord):
            if record.version and record.version not in invocations.versions:
                invocations.versions.append(record.version)
        elif isinstance(record, ReportRecord):
            invocations.reports += 1
            invocations.timed_out += record.status == "timeout"
            invocations.max_duration_ms = _maximum(invocations.max_duration_ms, record.duration_ms)
            invocations.memory_size_mb = _maximum(invocations.memory_size_mb, record.memory_size_mb)
            invocations.max_memory_used_mb = _maximum(invocations.max_memory_used_mb, record.max_memory_used_mb)
            invocations.max_init_duration_ms = _maximum(invocations.max_init_duration_ms, record.init_duration_ms)
            used, size = record.max_memory_used_mb, record.memory_size_mb
            invocations.at_memory_limit += bool(size and used is not None and used >= size)
            if record.status:
                invocations.statuses[record.status] = invocations.statuses.get(record.status, 0) + 1
            if record.error_type:
                invocations.error_types[record.error_type] = invocations.error_types.get(record.error_type, 0) + 1
        elif isinstance(record, ErrorRecord):
            key = (record.error_type, record.origin, record.runtime, record.handled, version)
            if key in groups:
                group = groups[key]
                group.count += 1
                group.last_event = max(group.last_event, position)
            else:
                groups[key] = LogErrorSummary(
                    error_type=record.error_type,
                    message=record.message[:MAX_SUMMARY_MESSAGE],
                    origin=record.origin,
                    category=record.category,
                    runtime=record.runtime,
                    handled=record.handled,
                    operation=record.operation,
                    function_version=version,
                    count=1,
                    first_event=position,
                    last_event=position,
                    failure_mode=failure_mode_of(record.error_type, record.message),
                )
    return list(groups.values()), invocations


def summarize(
    messages: Sequence[str], streams: Sequence[str | None] | None = None
) -> tuple[list[LogErrorSummary], InvocationSummary]:
    """The errors in a window of events (grouped, in order of first appearance; indices into ``messages``)
    and the invocations' figures.

    ``streams``: each event's log stream name, which says the version that ran; START lines say it too.
    """
    return _summaries(_read(messages, streams), range(len(messages)))


# -- folding: the window as a reader needs it ------------------------------------------------------
# What varies between repeats of one line: times, request and trace ids, hex digests, numbers.
_VARYING = re.compile(
    rf"{_ISO}"
    r"|\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
    r"|\b(?=[0-9A-Za-z]*\d)[0-9A-Za-z]{16,}\b"
    r"|\b[0-9a-fA-F]{8,}\b"
)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_ID = "<id>"
# Only a line's head is normalized (an event may hold 256 KB): beyond it, repeats must match exactly.
NORMALIZED_HEAD = 4096


def normalize_message(text: str, *, numbers: bool = True) -> str:
    """``text`` with what varies between repeats of one line replaced (times, ids; ``numbers`` too), so
    that repeats compare equal. Only for comparing: a reader is always shown a line's real text. Past its
    first NORMALIZED_HEAD characters a line is compared as it is."""
    text = text.strip()
    head, tail = text[:NORMALIZED_HEAD], text[NORMALIZED_HEAD:]
    head = _VARYING.sub(_ID, head)
    head = _NUMBER.sub("#", head) if numbers else head
    return f"{head}\x00{tail}" if tail else head


@dataclass
class FoldedEvent:
    """One line of the window and its repeats: ``first`` / ``last`` index the window's events."""

    first: int
    last: int
    count: int = 1


def fold_key(record: LogRecord | None, message: str, version: str | None) -> tuple[Any, ...]:
    """What makes two events repeats of one line. An error is the same error (type, origin, how it was
    reported, version) with the same message once times and ids are set aside: numbers in an error's
    message stay (``after 1.00 seconds`` is not ``after 3.00 seconds``), so distinct errors never fold
    together. Any other line is the same text once times, ids and numbers are set aside; an error never
    folds with text that merely mentions it."""
    if isinstance(record, ErrorRecord):
        return (
            "error",
            record.error_type,
            record.origin,
            record.category,
            record.runtime,
            record.handled,
            record.operation,
            version,
            normalize_message(record.message, numbers=False),
        )
    return ("text", version, normalize_message(message))


@dataclass
class FoldedWindow:
    """A window of events as a reader needs it: the platform's START / END / REPORT lines left out (their
    figures are in ``invocations``), repeated lines folded into their first occurrence (in order of first
    appearance), and the errors with ``first_event`` / ``last_event`` indexing ``events``."""

    events: list[FoldedEvent]
    errors: list[LogErrorSummary]
    invocations: InvocationSummary


def fold(messages: Sequence[str], streams: Sequence[str | None] | None = None) -> FoldedWindow:
    """Fold a window of events (oldest first); see :class:`FoldedWindow`."""
    read = _read(messages, streams)
    events: list[FoldedEvent] = []
    by_key: dict[tuple[Any, ...], int] = {}
    positions = []
    for index, ((record, version), message) in enumerate(zip(read, messages, strict=True)):
        if isinstance(record, StartRecord | EndRecord | ReportRecord):
            positions.append(-1)  # not an error: never a position the summaries report
            continue
        key = fold_key(record, message, version)
        if key in by_key:
            folded = events[by_key[key]]
            folded.last, folded.count = index, folded.count + 1
        else:
            by_key[key] = len(events)
            events.append(FoldedEvent(first=index, last=index))
        positions.append(by_key[key])
    errors, invocations = _summaries(read, positions)
    return FoldedWindow(events=events, errors=errors, invocations=invocations)


def _maximum(current: Any, value: Any) -> Any:
    if value is None:
        return current
    return value if current is None else max(current, value)
