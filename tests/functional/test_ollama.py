"""RESPONDER_MODEL=ollama:<model>, the third --model choice the lock holds, against a local Ollama endpoint.

The endpoint speaks Ollama's /api/chat (newline-delimited JSON chunks, tool calls with object arguments): the
agent loop runs through it, tool result and all, with the versions of langchain-ollama and ollama uv.lock pins.
"""

from __future__ import annotations

import json
import threading

import anyio
import pytest

from incident_responder.agent.graph import run_agent
from incident_responder.agent.models import MAX_OUTPUT_TOKENS, create_chat_model
from incident_responder.agent.spec import Limits
from incident_responder.investigation.investigator import INVESTIGATOR
from tests.fakes import diagnosis, logs_provider, model_endpoint

pytest.importorskip("langchain_ollama", reason="the ollama extra is not installed")


def chunk(name: str, args: dict) -> dict:
    return {
        "model": "local-model",
        "created_at": "2026-11-24T00:00:00Z",
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": name, "arguments": args}}],
        },
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 200,
        "eval_count": 20,
    }


@pytest.fixture
def endpoint():
    script: list[dict] = []
    received: list[tuple[str, dict]] = []

    def respond(path: str, request: dict) -> tuple[int, str, bytes]:
        received.append((path, request))
        content_type = "application/x-ndjson" if request.get("stream") else "application/json"
        return 200, content_type, (json.dumps(script.pop(0)) + "\n").encode()

    with model_endpoint(respond) as url:
        yield url, script, received


def test_ollama_endpoint_runs_the_agent_loop(endpoint):
    base_url, script, received = endpoint
    script += [chunk("get_recent_logs", {"lambda_name": "f"}), chunk("submit_diagnosis", diagnosis())]
    model = create_chat_model("ollama:local-model", base_url=base_url)
    result = anyio.run(lambda: run_agent(INVESTIGATOR, model, logs_provider(), "<incident>{}</incident>"))
    assert result.end_reason == "submitted" and result.payload.evidence[0].verified
    assert (result.usage.input_tokens, result.usage.output_tokens) == (400, 40)
    path, first = received[0]
    assert path == "/api/chat" and first["model"] == "local-model" and first["options"]["temperature"] == 0
    assert {t["function"]["name"] for t in first["tools"]} == {"get_recent_logs", "submit_diagnosis"}
    tool_reply = [m for m in received[1][1]["messages"] if m["role"] == "tool"][0]
    assert "untrusted" in tool_reply["content"]


def test_one_model_serves_runs_in_two_event_loops(endpoint):
    """A warm process runs each incident in its own event loop; the endpoint keeps connections alive, so a connection
    pooled in the first loop must not serve the second."""
    base_url, script, _ = endpoint
    model = create_chat_model("ollama:local-model", base_url=base_url)
    for _ in range(2):
        script += [chunk("get_recent_logs", {"lambda_name": "f"}), chunk("submit_diagnosis", diagnosis())]
        result = anyio.run(lambda: run_agent(INVESTIGATOR, model, logs_provider(), "<incident>{}</incident>"))
        assert result.end_reason == "submitted"


def test_each_call_caps_the_models_output(endpoint):
    base_url, script, received = endpoint
    script += [chunk("submit_diagnosis", diagnosis(evidence=[], remediation_plan=[]))]
    model = create_chat_model("ollama:local-model", base_url=base_url)
    anyio.run(lambda: run_agent(INVESTIGATOR, model, logs_provider(), "<i/>"))
    assert received[0][1]["options"]["num_predict"] == MAX_OUTPUT_TOKENS  # as the Bedrock path caps it


def test_a_call_that_outlives_the_deadline_ends_the_run_and_is_counted():
    released = threading.Event()

    def respond(path: str, request: dict) -> tuple[int, str, bytes]:
        released.wait(30)  # a model that stalls until the test ends
        return 200, "application/json", json.dumps(chunk("submit_diagnosis", diagnosis())).encode()

    with model_endpoint(respond) as url:
        try:
            run = anyio.run(
                lambda: run_agent(
                    INVESTIGATOR,
                    create_chat_model("ollama:local-model", base_url=url),
                    logs_provider(),
                    "<i/>",
                    limits=Limits(deadline_buffer_ms=2_000),
                    remaining_ms=lambda: 3_000,
                )
            )
        finally:
            released.set()
    assert run.end_reason.startswith("deadline: the model did not answer within 2.0 s")
    assert run.payload is None and run.llm_calls == 1
