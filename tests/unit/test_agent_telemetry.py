"""Each tool call and model call of an agent leaves a log line and EMF metrics (agent/telemetry.py)."""

from __future__ import annotations

import json

import anyio
import pytest
from botocore.exceptions import ClientError

from incident_responder.agent.errors import ModelTransientError
from incident_responder.agent.spec import Limits
from tests.agent_runs import run
from tests.fakes import ScriptedChatModel, call, diagnosis


def _records(out: str) -> tuple[list[dict], list[dict]]:
    """(log lines, EMF blobs) printed to stdout."""
    logs, metrics = [], []
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        (metrics if "_aws" in record else logs).append(record)
    return logs, metrics


def _metric(blobs: list[dict], name: str) -> list[dict]:
    return [b for b in blobs if any(m["Name"] == name for m in b["_aws"]["CloudWatchMetrics"][0]["Metrics"])]


@pytest.fixture
def metrics_on(monkeypatch):
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "IncidentResponder")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "incident-responder")
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)


def test_each_tool_and_model_call_is_logged_and_measured(metrics_on, capsys):
    model = ScriptedChatModel(
        responses=[
            call("get_recent_logs", {"lambda_name": "f"}),
            call("delete_everything", {}),
            call("submit_diagnosis", diagnosis()),
        ]
    )
    run(model)
    logs, blobs = _records(capsys.readouterr().out)
    tools = [r for r in logs if r["message"] == "tool_executed"]
    assert [(r["tool"], r["outcome"]) for r in tools] == [("get_recent_logs", "ok"), ("delete_everything", "error")]
    ok, failed = tools
    assert json.loads(ok["arguments"]) == {"lambda_name": "f"}
    assert ok["bytes"] > 0 and isinstance(ok["duration_ms"], int)
    assert "unknown tool" in failed["error"]
    models = [r for r in logs if r["message"] == "model_called"]
    assert [r["turn"] for r in models] == [1, 2, 3] and all(r["outcome"] == "ok" for r in models)
    assert all(r["input_tokens"] > 0 for r in models)

    durations = _metric(blobs, "ToolDuration")
    assert [b["tool"] for b in durations] == ["get_recent_logs", "delete_everything"]
    assert durations[0]["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service", "tool"]]
    assert durations[0]["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "IncidentResponder"
    assert [b["tool"] for b in _metric(blobs, "ToolErrors")] == ["delete_everything"]
    for name in ("ModelDuration", "ModelInputTokens", "ModelOutputTokens"):
        assert len(_metric(blobs, name)) == 3, name
    assert _metric(blobs, "ModelInputTokens")[0]["ModelInputTokens"] in (
        models[0]["input_tokens"],
        [models[0]["input_tokens"]],
    )


def test_long_arguments_are_cut_in_the_log(metrics_on, capsys):
    model = ScriptedChatModel(
        responses=[call("get_recent_logs", {"lambda_name": "f" * 2000}), call("submit_diagnosis", diagnosis())]
    )
    run(model)
    logs, _ = _records(capsys.readouterr().out)
    (line,) = [r for r in logs if r["message"] == "tool_executed"]
    assert len(line["arguments"]) == 512


def test_no_metrics_where_they_are_disabled_or_have_no_namespace(monkeypatch, capsys):
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "IncidentResponder")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    model = ScriptedChatModel(
        responses=[call("get_recent_logs", {"lambda_name": "f"}), call("submit_diagnosis", diagnosis())]
    )
    run(model)
    logs, blobs = _records(capsys.readouterr().out)
    assert blobs == [] and any(r["message"] == "tool_executed" for r in logs)
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED")
    monkeypatch.delenv("POWERTOOLS_METRICS_NAMESPACE")
    run(ScriptedChatModel(responses=[call("submit_diagnosis", diagnosis(evidence=[], remediation_plan=[]))]))
    assert _records(capsys.readouterr().out)[1] == []


def test_each_call_is_an_xray_subsegment_where_lambda_traces(monkeypatch):
    from contextlib import asynccontextmanager

    from aws_xray_sdk.core import xray_recorder

    from incident_responder.agent import telemetry

    opened: list[tuple[str, dict]] = []

    class Subsegment:
        def __init__(self, name: str):
            self.annotations: dict = {}
            opened.append((name, self.annotations))

        def put_annotation(self, key, value):
            self.annotations[key] = value

    @asynccontextmanager
    async def in_subsegment_async(name):
        yield Subsegment(name)

    monkeypatch.setattr(telemetry, "tracing_enabled", lambda: True)
    monkeypatch.setattr(xray_recorder, "in_subsegment_async", in_subsegment_async)
    run(
        ScriptedChatModel(
            responses=[call("get_recent_logs", {"lambda_name": "f"}), call("submit_diagnosis", diagnosis())]
        )
    )
    assert opened == [
        ("## model", {"turn": 1}),
        ("## tool get_recent_logs", {"tool": "get_recent_logs"}),
        ("## model", {"turn": 2}),
    ]


def test_no_subsegment_where_no_segment_can_be_written(monkeypatch):
    from aws_xray_sdk.core import xray_recorder

    def refuse(name):
        raise AssertionError(f"subsegment {name} opened outside Lambda")

    monkeypatch.setattr(xray_recorder, "in_subsegment_async", refuse)
    result, _ = run(
        ScriptedChatModel(
            responses=[call("get_recent_logs", {"lambda_name": "f"}), call("submit_diagnosis", diagnosis())]
        )
    )
    assert result.end_reason == "submitted"


def test_a_model_call_that_raised_is_logged_counted_and_reported(metrics_on, capsys):
    throttled = ClientError({"Error": {"Code": "ThrottlingException", "Message": "Too many requests"}}, "Converse")
    model = ScriptedChatModel(responses=[call("get_recent_logs", {"lambda_name": "f"}), throttled])
    with pytest.raises(ModelTransientError) as raised:
        run(model)
    # The run leaves no record but its error (the state machine keeps the message): it says how many calls it made.
    assert "2 model call(s) made, the last one failed" in str(raised.value)
    logs, blobs = _records(capsys.readouterr().out)
    models = [r for r in logs if r["message"] == "model_called"]
    assert [(r["turn"], r["outcome"]) for r in models] == [(1, "ok"), (2, "error")]
    assert len(_metric(blobs, "ModelDuration")) == 2
    assert [b["ModelErrors"] for b in _metric(blobs, "ModelErrors")] in ([1], [[1]], [1.0], [[1.0]])


class StalledChatModel(ScriptedChatModel):
    """A model whose endpoint never answers."""

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        await anyio.sleep(60)
        raise AssertionError("the call was not cut at the deadline")


def test_a_model_call_cut_at_the_deadline_is_logged_and_counted(metrics_on, capsys):
    result, _ = run(StalledChatModel(responses=[]), limits=Limits(deadline_buffer_ms=1_000), remaining_ms=lambda: 1_500)
    assert result.end_reason.startswith("deadline: the model did not answer within 1.0 s (turn 1)")
    assert result.llm_calls == 1 and result.model_ms >= 900
    logs, blobs = _records(capsys.readouterr().out)
    assert [(r["turn"], r["outcome"]) for r in logs if r["message"] == "model_called"] == [(1, "timeout")]
    assert len(_metric(blobs, "ModelErrors")) == 1
