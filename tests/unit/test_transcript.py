"""Each agent's transcript (agent/transcript.py): built by the loop, one entry per event; stored with its record
(whole in S3, bounded in DynamoDB); kept when the run fails; shown on the report (collapsed, escaped) and as text."""

from __future__ import annotations

import json
import re

import anyio
import pytest
from botocore.exceptions import ClientError
from langchain_core.messages import AIMessage

from incident_responder.agent.errors import McpConnectionError, ModelTransientError
from incident_responder.agent.graph import run_agent
from incident_responder.agent.spec import Limits
from incident_responder.agent.transcript import RESULT_LIMIT, bound, size
from incident_responder.investigation.investigator import INVESTIGATOR
from incident_responder.reporting.report import render_html
from incident_responder.reporting.transcript import transcript_html, transcript_text
from incident_responder.state.store import ITEM_LIMIT, TRANSCRIPT_SHARE, RecordStore, item_size
from tests.fakes import LOGS, ScriptedChatModel, call, diagnosis, logs_provider


def run(model, provider=None, limits=None, remaining_ms=None):
    provider = provider or logs_provider()
    return anyio.run(
        lambda: run_agent(
            INVESTIGATOR,
            model,
            provider,
            "<incident>{}</incident>",
            limits=limits or Limits(),
            remaining_ms=remaining_ms,
        )
    )


def kinds(transcript: list[dict]) -> list[str]:
    return [e["kind"] for e in transcript]


def test_every_event_of_a_run_is_an_entry_in_order():
    """Prose, a made-up tool, a real call whose secrets the server redacted, a made-up diagnosis rejected, then
    one accepted: each shows as what it was, not as a counter."""
    redacted_logs = {**LOGS, "events": [{"message": "key=[REDACTED:aws-secret-key] " + "x" * 3000}]}
    redacted_logs["redacted"] = {"aws-secret-key": 2, "jwt": 1}
    model = ScriptedChatModel(
        responses=[
            AIMessage(content="It is probably IAM; I am fairly sure."),
            call("delete_everything", {"really": True}),
            call("get_recent_logs", {"lambda_name": "f"}),
            call("submit_diagnosis", diagnosis(fault_types=["gremlins"])),
            call("submit_diagnosis", diagnosis()),
        ]
    )
    result = run(model, logs_provider(lambda lambda_name: redacted_logs))
    t = result.transcript
    assert kinds(t) == [
        "model", "nudge", "model", "tool", "model", "tool", "model", "submission", "model", "submission", "end",
    ]  # fmt: skip
    said, nudged, made_up, unknown, looked, logs, wrong, rejected, right, accepted, end = t
    assert said["text"] == "It is probably IAM; I am fairly sure." and said["tool_calls"] == []
    assert (said["turn"], said["outcome"], said["input_tokens"], said["output_tokens"]) == (1, "answered", 100, 10)
    assert "without calling a tool" in nudged["text"]
    assert made_up["tool_calls"] == [{"name": "delete_everything", "arguments": {"really": True}}]
    assert unknown["tool"] == "delete_everything" and unknown["unknown_tool"] and not unknown["ok"]
    assert unknown["error"].startswith("ERROR: unknown tool 'delete_everything'; available: get_recent_logs")
    assert looked["tool_calls"][0]["name"] == "get_recent_logs"
    assert logs["ok"] and logs["redacted"] == {"aws-secret-key": 2, "jwt": 1} and "unknown_tool" not in logs
    assert logs["result"].startswith('{"error":null,"events":[{"message":"key=[REDACTED:aws-secret-key] xxx')
    assert logs["result_chars"] > 3000 and "[cut: " in logs["result"] and len(logs["result"]) < RESULT_LIMIT + 60
    assert logs["bytes"] > logs["result_chars"]  # what the model was sent: the whole result, quoted
    assert wrong["tool_calls"][0]["arguments"]["fault_types"] == ["gremlins"]
    assert not rejected["accepted"] and rejected["problem"].startswith("fault_types.0: Input should be")
    # Accepted, and what checking it found: its one pointer quotes no tool output (the logs were changed).
    assert accepted["accepted"] and accepted["report"]["grounded_ratio"] == 0.0 and accepted["report"]["total"] == 1
    assert end == {"kind": "end", "end_reason": "submitted"}
    assert [e["turn"] for e in t if e["kind"] == "model"] == [1, 2, 3, 4, 5] and result.llm_calls == 5


def test_the_watchdogs_notice_and_a_run_that_gives_up_are_entries():
    model = ScriptedChatModel(responses=[AIMessage(content="one more look")])
    result = run(model, remaining_ms=lambda: 1_000)
    assert kinds(result.transcript) == ["warning", "model", "end"]
    warning, turn, end = result.transcript
    assert warning["reason"] == "deadline" and warning["text"].startswith("SUBMIT NOW (deadline reached)")
    assert turn["text"] == "one more look"
    assert end["end_reason"] == "deadline: no submit_diagnosis after the final warning" == result.end_reason


class StallingModel(ScriptedChatModel):
    """Never answers in time."""

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        await anyio.sleep(30)
        raise AssertionError("not cancelled")


def test_a_timed_out_model_call_is_a_turn_counted_and_shown():
    # 2 s left, a 2 s buffer: no warning yet, and the call may take max(1, (2000 - 1000) / 1000) = 1 s.
    result = run(StallingModel(responses=[]), limits=Limits(deadline_buffer_ms=2_000), remaining_ms=lambda: 2_000)
    assert result.llm_calls == 1 and result.model_ms >= 900
    turn, end = result.transcript
    assert (turn["kind"], turn["turn"], turn["outcome"]) == ("model", 1, "timed_out")
    assert turn["error"] == "timed out: no answer within 1.0 s" and turn["ms"] >= 900
    assert end["end_reason"].startswith("deadline: the model did not answer within 1.0 s")
    assert "turn 1: timed out: timed out: no answer within 1.0 s" in transcript_text(
        {"investigator": result.transcript}
    )


def test_a_failed_model_call_keeps_the_transcript_so_far_on_the_error():
    throttled = ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "Converse")
    model = ScriptedChatModel(responses=[call("get_recent_logs", {"lambda_name": "f"}), throttled])
    with pytest.raises(ModelTransientError) as raised:
        run(model)
    so_far = raised.value.agent_run
    assert kinds(so_far.transcript) == ["model", "tool", "model", "end"]
    failed = so_far.transcript[2]
    assert (failed["turn"], failed["outcome"]) == (2, "failed") and "ThrottlingException" in failed["error"]
    assert so_far.transcript[-1]["end_reason"].startswith("error: ModelTransientError: ")
    assert so_far.llm_calls == 2 and so_far.tool_calls == 1 and so_far.payload is None


def test_an_mcp_failure_mid_turn_keeps_the_calls_made_before_it():
    def lost(lambda_name):
        raise McpConnectionError("the diagnostics server stopped answering")

    two_calls = AIMessage(
        content="Looking at two things.",
        tool_calls=[
            {"name": "delete_everything", "args": {}, "id": "a", "type": "tool_call"},
            {"name": "get_recent_logs", "args": {"lambda_name": "f"}, "id": "b", "type": "tool_call"},
        ],
    )
    with pytest.raises(McpConnectionError) as raised:
        run(ScriptedChatModel(responses=[two_calls]), logs_provider(lost))
    t = raised.value.agent_run.transcript
    assert kinds(t) == ["model", "tool", "tool", "end"]
    assert t[1]["unknown_tool"] and t[2]["tool"] == "get_recent_logs" and not t[2]["ok"]
    assert t[2]["error"] == "McpConnectionError: the diagnostics server stopped answering"


def test_nothing_of_the_transcript_reaches_the_model():
    model = ScriptedChatModel(
        responses=[AIMessage(content="prose"), call("submit_diagnosis", diagnosis(evidence=[], remediation_plan=[]))]
    )
    result = run(model)
    assert result.transcript and all('"kind"' not in json.dumps(m.content) for m in model.seen[-1]["messages"])


# -- stored ------------------------------------------------------------------------------------------
def _long_run(entries: int) -> list[dict]:
    turn = {"kind": "model", "turn": 1, "outcome": "answered", "text": "t" * 3000, "tool_calls": [], "ms": 1}
    tool = {"kind": "tool", "tool": "get_recent_logs", "arguments": {}, "ok": True, "result": "r" * 1500, "bytes": 9}
    return [dict(turn, turn=i) if i % 2 else dict(tool) for i in range(entries)] + [{"kind": "end", "end_reason": "x"}]


def test_bounding_cuts_results_then_leaves_out_the_middle_keeping_start_and_end():
    small = _long_run(4)
    assert bound(small, 100_000) == (small, False)
    cut, truncated = bound(_long_run(40), 40_000)
    assert truncated and size(cut) <= 40_000 and len(cut) == 41
    assert all(len(e.get("result", "")) < 600 for e in cut) and "whole in S3" in cut[0]["result"]
    kept, truncated = bound(_long_run(400), 20_000)
    assert truncated and size(kept) <= 20_000
    omitted = [e for e in kept if e["kind"] == "omitted"]
    assert len(omitted) == 1 and omitted[0]["entries"] > 0 and kept[-1]["kind"] == "end" and kept[1]["turn"] == 1
    assert len(kept) - 1 + omitted[0]["entries"] == 401


def test_each_record_keeps_its_transcript_whole_in_s3_and_bounded_in_dynamodb(clients):
    from incident_responder.lab.account.resources import create_table

    create_table(clients, "IncidentContextTable", "incident-context")
    clients.get("s3").create_bucket(Bucket="artifacts")
    store = RecordStore("incident-context", bucket="artifacts", ttl_days=7)
    whole = _long_run(400)  # ~1.8 MB: far past the item's 400 KB
    chain = [{"type": "system", "data": {"content": "prompt"}}, {"type": "ai", "data": {"content": "c" * 300_000}}]
    item = store.item("i-1", "investigation", {"outcome": "DIAGNOSED"}, chain, "s3://artifacts/k", whole)
    assert item_size(item) < ITEM_LIMIT and len(item["transcript"]["S"]) <= TRANSCRIPT_SHARE
    stored = store.save(clients, "i-1", "investigation", {"outcome": "DIAGNOSED"}, chain, {}, transcript=whole)
    loaded = store.load(clients, "i-1", "investigation")
    assert loaded["transcript_truncated"] and loaded["transcript"][-1] == {"kind": "end", "end_reason": "x"}
    assert len(loaded["transcript"]) == 401 and loaded["transcript"][0]["result"].endswith(
        "[cut to fit the table; whole in S3]"
    )
    body = json.loads(
        clients.get("s3").get_object(Bucket="artifacts", Key="incidents/i-1/investigation.json")["Body"].read()
    )
    assert body["transcript"] == whole and stored["artifact_uri"] == "s3://artifacts/incidents/i-1/investigation.json"
    # A short one is kept whole in the table; the report reads S3 only for a cut one.
    store.save(clients, "i-2", "review", {"outcome": "APPROVED"}, [], {}, transcript=_long_run(3))
    short = store.load(clients, "i-2", "review")
    assert short["transcript"] == _long_run(3) and not short["transcript_truncated"]
    from incident_responder.reporting.transcript import transcripts

    found, missing = transcripts(clients, {"investigation": loaded, "review": short})
    assert found == {"investigator": whole, "critic": _long_run(3)} and missing == []


def test_a_step_whose_model_fails_stores_the_run_so_far_then_raises(clients):
    from incident_responder.intake.alerts import parse_alert
    from incident_responder.investigation.investigate import run_investigation
    from incident_responder.lab.account.resources import create_table

    create_table(clients, "IncidentContextTable", "incident-context")
    clients.get("s3").create_bucket(Bucket="artifacts")
    store = RecordStore("incident-context", bucket="artifacts")
    incident = parse_alert(
        json.dumps({"function_name": "f", "detected_at": "2026-01-01T00:00:00Z", "error_type": "AccessDenied"})
    )
    denied = ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no access"}}, "Converse")
    model = ScriptedChatModel(responses=[call("get_recent_logs", {"lambda_name": "f"}), denied])
    with pytest.raises(Exception, match="AccessDeniedException") as raised:
        run_investigation(
            incident, model=model, store=store, limits=Limits(), provider=logs_provider(), clients=clients
        )
    assert type(raised.value).__name__ == "ModelAuthError"  # the error the state machine routes on, unchanged
    record = store.load(clients, incident.incident_id, "investigation")
    assert record["summary"]["outcome"] == "ERROR" and record["summary"]["metrics"]["llm_calls"] == 2
    assert record["summary"]["end_reason"].startswith("error: ModelAuthError: ")
    # The logs are the errors' first read: made before the first turn, then the model's call, then the failure.
    assert kinds(record["transcript"]) == ["tool", "model", "tool", "model", "end"]
    assert record["transcript"][0]["pre_read"] and record["transcript"][3]["outcome"] == "failed"


# -- shown -------------------------------------------------------------------------------------------
HOSTILE = "</pre></details><script>alert(1)</script><img src=x onerror=alert(2)><details open>"


def _hostile_transcript() -> list[dict]:
    return [
        {"kind": "model", "turn": 1, "outcome": "answered", "text": HOSTILE + "\x1b[31mred",
         "tool_calls": [{"name": HOSTILE, "arguments": {"q": HOSTILE}}], "input_tokens": 5, "output_tokens": 2, "ms": 3},
        {"kind": "tool", "tool": HOSTILE, "arguments": {"q": HOSTILE}, "ok": False, "unknown_tool": True,
         "error": "ERROR: unknown tool " + HOSTILE, "bytes": 10, "ms": 0},
        {"kind": "tool", "tool": "get_recent_logs", "arguments": {}, "ok": True, "result": HOSTILE, "result_chars": 9000,
         "redacted": {"jwt": 3}, "bytes": 10, "ms": 0},
        {"kind": "submission", "tool": "submit_diagnosis", "accepted": False, "problem": HOSTILE},
        {"kind": "end", "end_reason": "no_tool_call: answered in text after 1 nudge(s)"},
    ]  # fmt: skip


def test_the_reports_transcript_is_collapsed_and_hostile_text_stays_text():
    from tests.incident_details import _detail

    detail = _detail("FAILED")
    detail["transcripts"] = {"investigator": _hostile_transcript()}
    page = render_html(detail)
    section = page[page.index('<section id="transcript">') :]
    section = section[: section.index("</section>")]
    assert "<script" not in page.lower() and "<img" not in page and "<details open" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in section and "&lt;details open&gt;" in section
    details = re.findall(r"<details[^>]*>", section)
    assert len(details) == 3 and all("open" not in d for d in details)  # one turn, two tool calls: all closed
    assert section.count("<summary>") == 3 and "redacted: jwt 3" in section and "unknown tool" in section
    assert "(cut: 9000 chars in all)" in section and "rejected: &lt;/pre&gt;" in section
    assert "<a href='#transcript'>Transcript</a>" in page
    assert "No agent transcript is stored" in transcript_html({})


def test_the_transcript_as_text_shows_each_entry_and_no_terminal_escape():
    text = transcript_text({"investigator": _hostile_transcript()})
    assert "\x1b" not in text and "\\x1b[31mred" in text
    lines = text.splitlines()
    assert (
        lines[0]
        == "investigator: 1 model turn(s), 2 tool call(s); ended: no_tool_call: answered in text after 1 nudge(s)"
    )
    assert lines[1].startswith("  turn 1: called </pre></details>") and "5 in / 2 out tokens, 3 ms" in lines[1]
    assert any(
        line.startswith("    tool get_recent_logs: ok, 9000 chars") and "redacted: jwt 3" in line for line in lines
    )
    assert any(line.startswith("  submission submit_diagnosis: rejected: ") for line in lines)
    assert lines[-1] == "  end: no_tool_call: answered in text after 1 nudge(s)"
