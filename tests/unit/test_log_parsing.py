"""Lambda log events read by their structure (incident_responder.account.log_records): Python and Node.js runtimes,
AWS SDK errors, the platform's lines, and text that only looks like an error."""

from __future__ import annotations

import json

import pytest

from incident_responder.account.log_records import (
    EndRecord,
    ErrorRecord,
    ReportRecord,
    StartRecord,
    classify_error_type,
    parse_event,
)
from incident_responder.account.log_window import stream_version, summarize
from tests.log_lines import DECOYS, ERRORS, RID, TS


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_are_read_by_their_structure(case):
    line, error_type, origin, category, runtime, *rest = ERRORS[case]
    handled, operation = (rest + [False, None][len(rest) :])[:2]
    record = parse_event(line)
    assert isinstance(record, ErrorRecord), record
    assert (record.error_type, record.origin, record.category, record.runtime) == (
        error_type,
        origin,
        category,
        runtime,
    )
    assert (record.handled, record.operation) == (handled, operation)


def test_the_platform_lines_every_runtime_shares():
    assert parse_event(f"START RequestId: {RID} Version: 3") == StartRecord(RID, "3")
    assert parse_event(f"START RequestId: {RID} Version: $LATEST") == StartRecord(RID, "$LATEST")
    assert parse_event(f"END RequestId: {RID}") == EndRecord(RID)
    report = parse_event(
        f"REPORT RequestId: {RID}\tDuration: 1000.00 ms\tBilled Duration: 1000 ms\tMemory Size: 128 MB\t"
        "Max Memory Used: 128 MB\tInit Duration: 350.12 ms\tStatus: timeout"
    )
    assert report == ReportRecord(
        RID,
        duration_ms=1000.0,
        billed_duration_ms=1000.0,
        memory_size_mb=128,
        max_memory_used_mb=128,
        init_duration_ms=350.12,
        status="timeout",
    )
    newer = parse_event(
        f"REPORT RequestId: {RID}\tDuration: 90.1 ms\tBilled Duration: 91 ms\tMemory Size: 256 MB\t"
        "Max Memory Used: 256 MB\tStatus: error\tError Type: Runtime.OutOfMemory"
    )
    assert isinstance(newer, ReportRecord) and (newer.status, newer.error_type) == ("error", "Runtime.OutOfMemory")
    platform = json.dumps(
        {
            "time": TS,
            "type": "platform.report",
            "record": {
                "requestId": RID,
                "status": "timeout",
                "metrics": {"durationMs": 3000.5, "memorySizeMB": 512, "maxMemoryUsedMB": 90},
            },
        }
    )
    parsed = parse_event(platform)
    assert isinstance(parsed, ReportRecord) and (parsed.duration_ms, parsed.max_memory_used_mb) == (3000.5, 90)


@pytest.mark.parametrize("case", list(DECOYS))
def test_text_that_only_looks_like_an_error_is_text(case):
    assert parse_event(DECOYS[case]) is None


def test_summary_groups_errors_by_type_and_version_and_points_at_the_events():
    lines = [
        f"START RequestId: {RID} Version: 2",
        ERRORS["node-app-error"][0],
        f"END RequestId: {RID}",
        "[INFO] cache warm: 1532 keys",
        f"START RequestId: {RID} Version: 3",
        ERRORS["node-app-error"][0],
        ERRORS["node-throughput-sdk-v3"][0],
        ERRORS["node-app-error"][0],
        f"REPORT RequestId: {RID}\tDuration: 40.00 ms\tBilled Duration: 40 ms\tMemory Size: 256 MB\tMax Memory Used: 90 MB",
    ]
    # One execution environment per stream: the second half ran in the stream of version 3.
    streams = ["2026/11/23/[2]aaaa"] * 4 + ["2026/11/23/[3]bbbb"] * 5
    errors, invocations = summarize(lines, streams)
    assert [(e.error_type, e.function_version, e.count, e.first_event, e.last_event) for e in errors] == [
        ("TypeError", "2", 1, 1, 1),
        ("TypeError", "3", 2, 5, 7),
        ("ProvisionedThroughputExceededException", "3", 1, 6, 6),
    ]
    assert invocations.versions == ["2", "3"] and invocations.reports == 1 and invocations.max_memory_used_mb == 90
    # Without stream names, the START line says which version ran.
    errors, _ = summarize(lines)
    assert [e.function_version for e in errors] == ["2", "3", "3"]


def test_stream_names_and_error_types_seen_without_a_line():
    assert stream_version("2026/11/23/[$LATEST]0123abcd") == "$LATEST"
    assert stream_version("2026/11/23/[12]0123abcd") == "12" and stream_version("odd-name") is None
    assert classify_error_type("KMSDisabledException") == ("aws_service", "kms")
    assert classify_error_type("Sandbox.Timedout") == ("platform", "timeout")
    assert classify_error_type("botocore.errorfactory.ThrottlingException") == ("aws_service", "throttled")
    assert classify_error_type("KeyError") is None and classify_error_type(None) is None


def test_exits_without_a_reason_and_with_the_type_on_the_same_line():
    bare = parse_event(f"RequestId: {RID} Error: Runtime exited without providing a reason\nRuntime.ExitError")
    assert isinstance(bare, ErrorRecord) and bare.category == "runtime_exit"
    inline = parse_event(f"RequestId: {RID} Error: Runtime exited with error: signal: killed Runtime.OutOfMemory")
    assert isinstance(inline, ErrorRecord) and (inline.error_type, inline.category) == (
        "Runtime.OutOfMemory",
        "out_of_memory",
    )
    assert parse_event(f"RequestId: {RID} Error: Runtime exited because I said so") is None


def test_hostile_lines_the_size_of_a_log_event_parse_in_linear_time():
    import time

    size = 250_000  # CloudWatch Logs takes events up to 256 KB
    lines = [
        f"REPORT RequestId: {RID}\t" + " " * size + "\nx",
        f"RequestId: {RID} Error: Runtime exited with error: " + " " * size + "x",
        "[ERROR] " + "A" * size + ": x",
        f"{TS} {RID} Task timed out after " + "1" * size + " seconds x",
        f"{TS}\t{RID}\tERROR\t" + "E" * size + "\n    at x",
        f"[ERROR]\t{TS}\t{RID}\tx\nTraceback (most recent call last):\n" + "  File x\n" * (size // 10) + "E: x",
    ]
    started = time.monotonic()
    records = [parse_event(line) for line in lines]
    assert time.monotonic() - started < 2.0
    assert records[0] is None and records[1] is not None  # a REPORT line is one line; an exit reason may be blank


def test_an_init_phase_that_failed_or_timed_out_is_the_platforms_error():
    crashed = parse_event("INIT_REPORT Init Duration: 1236.04 ms Phase: init Status: error Error Type: Extension.Crash")
    assert crashed == ErrorRecord("Extension.Crash", "Phase: init Status: error", "platform", "exception")
    timed_out = parse_event("INIT_REPORT Init Duration: 9999.31 ms\tPhase: init\tStatus: timeout")
    assert timed_out == ErrorRecord("INIT_REPORT", "Phase: init Status: timeout", "platform", "exception")
    assert parse_event("INIT_REPORT Init Duration: 212.50 ms\tPhase: init\tStatus: success") is None
    # What the code prints that merely mentions it is text.
    assert parse_event("[WARNING] INIT_REPORT Init Duration: 1 ms Phase: init Status: error") is None
