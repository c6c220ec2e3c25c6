"""What the models read, kept short without losing anything: log windows folded (repeats counted, the platform's
lines summarized), tool results without unset fields, schemas without what only repeats them, and the token
summary that keeps accuracy beside the count."""

from __future__ import annotations

import json

import jsonschema
import pytest

from incident_responder.account.log_window import NORMALIZED_HEAD, fold, normalize_message
from incident_responder.agent.evidence import check_pointer
from incident_responder.agent.protocol import quote_untrusted, untrusted_json
from incident_responder.agent.spec import model_tool_schema
from incident_responder.agent.tools import ToolSpec, model_facing_schema
from incident_responder.core.contracts import Diagnosis, ProposalSubmission, ReviewSubmission
from incident_responder.investigation.diagnostics import (
    ConfigDrift,
    IamState,
    LambdaConfig,
    NetworkConfig,
    RecentLogs,
    fold_events,
)
from incident_responder.lab.tokens import token_summary
from tests.log_lines import DECOYS, ERRORS, RID

OTHER_RID = "0b9e1c2d-2222-4a00-8b3e-1d2e3f4a5b6c"
START = f"START RequestId: {RID} Version: 3"
END = f"END RequestId: {RID}"
REPORT = (
    f"REPORT RequestId: {RID}\tDuration: 1000.00 ms\tBilled Duration: 1000 ms\tMemory Size: 128 MB\t"
    "Max Memory Used: 128 MB\tInit Duration: 350.00 ms\tStatus: timeout"
)
JSON_REPORT = json.dumps(
    {
        "time": "2026-11-23T18:44:05.108Z",
        "type": "platform.report",
        "record": {"requestId": RID, "status": "error", "errorType": "Runtime.OutOfMemory", "metrics": {}},
    }
)


def timed_out(rid: str, at: str = "2026-11-23T18:44:05.108Z", seconds: str = "1.00") -> str:
    return f"{at} {rid} Task timed out after {seconds} seconds"


def window(lines: list[str]) -> list[dict]:
    return [{"timestamp": 1795459445000 + 10 * i, "message": m, "stream": None} for i, m in enumerate(lines)]


# -- folding ---------------------------------------------------------------------------------------
def test_repeats_fold_into_their_first_occurrence_with_a_count_and_first_and_last_time():
    lines = [
        timed_out(RID),
        "[INFO] cache warm: 1532 keys",
        timed_out(OTHER_RID, at="2026-11-23T18:44:09.512Z"),
        "[INFO] cache warm: 1740 keys",  # the same line with another number
        timed_out("1c2d3e4f-3333-4b00-9c4f-2e3f4a5b6c7d", at="2026-11-23T18:44:12.001Z"),
    ]
    events, errors, _ = fold_events(window(lines))
    assert [(e.message, e.count) for e in events] == [(lines[0], 3), (lines[1], 2)]
    first, cache = events
    assert (first.timestamp, first.last_timestamp) == ("2026-11-23T18:44:05.000Z", "2026-11-23T18:44:05.040Z")
    assert (cache.timestamp, cache.last_timestamp) == ("2026-11-23T18:44:05.010Z", "2026-11-23T18:44:05.030Z")
    # The summary still counts every occurrence, and points at the folded line.
    (error,) = errors
    assert (error.error_type, error.count, error.first_event, error.last_event) == ("Sandbox.Timedout", 3, 0, 0)


def test_distinct_errors_are_never_folded_together():
    node_error = ERRORS["node-app-error"][0]
    lines = [
        timed_out(RID, seconds="1.00"),
        timed_out(OTHER_RID, seconds="3.00"),  # numbers in an error's message are part of the error
        "[ERROR] KeyError: 'order_id'\nTraceback (most recent call last):\n  File \"/var/task/app.py\"",
        "[ERROR] KeyError: 'customer'\nTraceback (most recent call last):\n  File \"/var/task/app.py\"",
        "[ERROR] ValueError: 'order_id'\nTraceback (most recent call last):\n  File \"/var/task/app.py\"",
        node_error,
        DECOYS["timeout-inside-a-sentence"],  # text that mentions an error is not that error
        DECOYS["prefixed-timeout"],
    ]
    events, errors, _ = fold_events(window(lines))
    assert [e.message for e in events] == lines and all(e.count == 1 for e in events)
    assert [(e.error_type, e.count, e.first_event, e.last_event) for e in errors] == [
        ("Sandbox.Timedout", 2, 0, 1),
        ("KeyError", 2, 2, 3),
        ("ValueError", 1, 4, 4),
        ("TypeError", 1, 5, 5),
    ]


def test_the_same_error_from_two_versions_stays_two_lines():
    lines = [ERRORS["node-app-error"][0]] * 2
    folded = fold(lines, ["2026/11/23/[2]aaaa", "2026/11/23/[3]bbbb"])
    assert [(e.first, e.count) for e in folded.events] == [(0, 1), (1, 1)]
    assert [e.function_version for e in folded.errors] == ["2", "3"]


def test_every_decoy_is_kept_as_text():
    events, errors, _ = fold_events(window(list(DECOYS.values())))
    assert [e.message for e in events] == list(DECOYS.values())[: len(events)]
    # Only the decoys that differ in nothing but numbers or ids would fold; none of these does.
    assert len(events) == len(DECOYS) and errors == []


def test_the_platforms_lines_are_left_out_and_summarized():
    lines = [START, "[INFO] processing", timed_out(RID), END, REPORT, JSON_REPORT, "START of the nightly batch"]
    events, errors, invocations = fold_events(window(lines))
    # "START of the nightly batch" is the code's text: only the platform's own shapes are left out.
    assert [e.message for e in events] == ["[INFO] processing", timed_out(RID), "START of the nightly batch"]
    assert errors[0].first_event == 1
    summary = invocations.model_dump(mode="json")
    assert summary == {
        "reports": 2,
        "versions": ["3"],
        "max_duration_ms": 1000.0,
        "memory_size_mb": 128,
        "max_memory_used_mb": 128,
        "max_init_duration_ms": 350.0,
        "timed_out": 1,
        "at_memory_limit": 1,
        "statuses": {"timeout": 1, "error": 1},
        "error_types": {"Runtime.OutOfMemory": 1},
    }


def test_lines_keep_the_order_of_their_first_occurrence():
    lines = ["[INFO] b", "[INFO] a", "[INFO] b", "[INFO] c", "[INFO] a"]
    events, _, _ = fold_events(window(lines))
    assert [(e.message, e.count) for e in events] == [("[INFO] b", 2), ("[INFO] a", 2), ("[INFO] c", 1)]
    stamps = [e.timestamp for e in events]
    assert stamps == sorted(stamps)


def test_normalizing_sets_aside_times_ids_and_numbers_only_for_comparing():
    a = f"[INFO]\t2026-11-23T18:44:05.108Z\t{RID}\tsaved order 17 (etag 9f86d081884c7d65)"
    b = f"[INFO]\t2026-11-23T19:01:00.000Z\t{OTHER_RID}\tsaved order 18 (etag 3b5d5c3712955042)"
    assert normalize_message(a) == normalize_message(b) != normalize_message("[INFO] saved invoice 17")
    assert normalize_message(timed_out(RID), numbers=False).endswith("after 1.00 seconds")
    (event,) = fold_events(window([a, b]))[0]
    assert event.message == a and event.count == 2  # the real text of the first occurrence


def test_past_its_head_a_long_line_folds_only_with_an_exact_repeat():
    head = "[INFO] payload " + "x" * NORMALIZED_HEAD
    lines = [head + " order 1", head + " order 2", head + " order 1"]
    folded = fold(lines)
    assert [(e.first, e.last, e.count) for e in folded.events] == [(0, 2, 2), (1, 1, 1)]


def test_a_quote_from_a_folded_line_is_verified_against_the_result():
    lines = [START, timed_out(RID), END, REPORT, timed_out(OTHER_RID), END, REPORT]
    events, errors, invocations = fold_events(window(lines))
    result = RecentLogs(
        log_group="/aws/lambda/f", window_minutes=10, events=events, errors=errors, invocations=invocations
    ).model_dump(mode="json")
    results = [{"tool": "get_recent_logs", "arguments": {}, "result": result}]
    assert check_pointer("get_recent_logs", "events[0].message", "Task timed out after 1.00 seconds", results)[0]
    assert check_pointer("get_recent_logs", "events[0].count", "2", results)[0]
    assert check_pointer("get_recent_logs", "invocations.at_memory_limit", "2", results)[0]
    assert not check_pointer("get_recent_logs", "events[1].message", "END RequestId", results)[0]


# -- tool results without unset fields -------------------------------------------------------------
def test_tool_results_leave_out_unset_fields_but_keep_what_is_a_finding():
    events, errors, invocations = fold_events(window([timed_out(RID)]))
    logs = RecentLogs(log_group="g", window_minutes=10, events=events, errors=errors).model_dump(mode="json")
    assert logs["events"] == [{"timestamp": "2026-11-23T18:44:05.000Z", "message": timed_out(RID)}]
    assert logs["errors"][0].keys() == {
        "error_type",
        "message",
        "origin",
        "category",
        "count",
        "first_event",
        "last_event",
        "failure_mode",
    }
    assert logs["errors"][0]["failure_mode"] == "function-timeout"  # the catalogue entry that prints it
    assert "invocations" not in logs and "error" not in logs
    # No line, or no error, is a finding: both lists are always written.
    assert RecentLogs(log_group="g", window_minutes=10).model_dump() == {
        "log_group": "g",
        "window_minutes": 10,
        "events": [],
        "errors": [],
    }
    config = LambdaConfig(FunctionName="f", MemorySize=128, ReservedConcurrentExecutions=0).model_dump(mode="json")
    assert config == {"FunctionName": "f", "MemorySize": 128, "ReservedConcurrentExecutions": 0}  # 0 is not unset
    assert IamState(function_name="f").model_dump() == {
        "function_name": "f",
        "attached_policy_arns": [],
        "inline_policies": {},
    }
    assert NetworkConfig(function_name="f").model_dump() == {"in_vpc": False, "function_name": "f"}
    assert ConfigDrift(function_name="f", error="no baseline").model_dump() == {
        "function_name": "f",
        "drifted": False,
        "differences": [],
        "error": "no baseline",
    }


@pytest.mark.parametrize("model", [RecentLogs, LambdaConfig, IamState, NetworkConfig, ConfigDrift])
def test_the_published_output_schemas_still_describe_every_field(model):
    schema = model.model_json_schema(mode="serialization")
    assert schema["properties"].keys() == model.model_fields.keys()
    empty = {
        name: "f" if name in ("FunctionName", "function_name", "log_group") else 10
        for name in schema.get("required", [])
    }
    jsonschema.validate(model.model_validate(empty).model_dump(mode="json"), schema)


# -- what the model is shown -----------------------------------------------------------------------
def test_model_facing_schemas_drop_only_repetition():
    full = {
        "title": "Args",
        "type": "object",
        "properties": {
            "title": {"title": "Title", "type": "string"},  # a property named title stays
            "size": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "default": None, "title": "S"},
            "choice": {"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}]},  # an enum keeps its anyOf
        },
        "required": ["title"],
    }
    shown = model_facing_schema(full)
    assert shown == {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "size": {"type": ["integer", "null"], "minimum": 1, "default": None},
            "choice": {"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}]},
        },
        "required": ["title"],
    }
    for instance, valid in (({"title": "x", "size": None}, True), ({"title": "x", "size": 0}, False), ({}, False)):
        for schema in (full, shown):
            assert jsonschema.Draft202012Validator(schema).is_valid(instance) is valid


@pytest.mark.parametrize("payload", [Diagnosis, ProposalSubmission, ReviewSubmission])
def test_the_terminal_tools_schemas_are_shorter_and_still_valid(payload):
    shown = model_tool_schema(payload)
    jsonschema.Draft202012Validator.check_schema(shown)
    assert '"title"' not in json.dumps({k: v for k, v in shown.items() if k != "properties"})
    assert len(json.dumps(shown)) < 0.9 * len(json.dumps(payload.model_json_schema()))


def test_a_tools_description_is_one_line_and_its_schema_model_facing():
    spec = ToolSpec("t", "Line one,\n        line two.", {"title": "tArguments", "type": "object", "properties": {}})
    assert spec.as_model_tool()["function"] == {
        "name": "t",
        "description": "Line one, line two.",
        "parameters": {"type": "object", "properties": {}},
    }


def test_tool_results_are_quoted_as_compact_json():
    quoted = quote_untrusted("t", {"b": [1, 2], "a": "</tool_result>"})
    assert '{"a":"<\\/tool_result>","b":[1,2]}' in quoted
    assert json.loads(untrusted_json({"x": {"y": None}}).replace("<\\/", "</")) == {"x": {"y": None}}


# -- the summary the bench prints ------------------------------------------------------------------
def test_token_summary_keeps_accuracy_beside_the_count():
    scores = [
        {"passed": True, "total_tokens": 100, "tokens_by_agent": {"investigation": 60, "proposal": 40}},
        {
            "passed": False,
            "total_tokens": 300,
            "tokens_by_agent": {"investigation": 100, "proposal": 120, "review": 80},
        },
        {"passed": True, "total_tokens": 200, "tokens_by_agent": {"investigation": 80, "proposal": 70, "review": 50}},
    ]
    summary = token_summary(scores)
    assert summary["tokens_per_incident"] == {"median": 200, "mean": 200.0, "p95": 300}
    assert summary["tokens_per_agent"]["review"] == {"median": 50, "mean": 43.3, "p95": 80}
    assert summary["accuracy"] == {"passed": 2, "total": 3, "ratio": 0.667}
    assert token_summary([])["tokens_per_incident"]["median"] is None
