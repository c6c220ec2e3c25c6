"""RESPONDER_MODEL=openai:<model> through init_chat_model, against a local OpenAI-compatible endpoint."""

from __future__ import annotations

import json
import threading

import anyio
import pytest

from incident_responder.agent.errors import ModelAuthError, ModelTransientError
from incident_responder.agent.graph import run_agent
from incident_responder.agent.models import MAX_OUTPUT_TOKENS, create_chat_model
from incident_responder.agent.spec import Limits
from incident_responder.investigation.investigator import INVESTIGATOR
from tests.fakes import diagnosis, logs_provider, model_endpoint
from tests.openai_endpoint import completion

pytest.importorskip("langchain_openai", reason="the openai extra is not installed")


@pytest.fixture
def endpoint(monkeypatch):
    script: list[tuple[int, dict]] = []
    received: list[dict] = []

    def respond(path: str, request: dict) -> tuple[int, str, bytes]:
        received.append(request)
        status, body = script.pop(0)
        return status, "application/json", json.dumps(body).encode()

    with model_endpoint(respond) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "local")
        yield script, received


def test_openai_compatible_endpoint_runs_the_agent_loop(endpoint):
    script, received = endpoint
    script += [
        (200, completion("get_recent_logs", {"lambda_name": "f"})),
        (200, completion("submit_diagnosis", diagnosis())),
    ]
    model = create_chat_model("openai:local-model")
    model.max_retries = 0
    result = anyio.run(lambda: run_agent(INVESTIGATOR, model, logs_provider(), "<incident>{}</incident>"))
    assert result.end_reason == "submitted" and result.payload.evidence[0].verified
    assert (result.usage.input_tokens, result.usage.output_tokens) == (400, 40)
    assert {t["function"]["name"] for t in received[0]["tools"]} == {"get_recent_logs", "submit_diagnosis"}
    tool_reply = [m for m in received[1]["messages"] if m["role"] == "tool"][0]
    assert tool_reply["tool_call_id"] == "call_get_recent_logs" and "untrusted" in tool_reply["content"]


@pytest.mark.parametrize("status, raised", [(429, ModelTransientError), (401, ModelAuthError)])
def test_openai_compatible_errors_are_typed(endpoint, status, raised):
    script, _ = endpoint
    script += [(status, {"error": {"message": "no", "type": "x"}})] * 5
    model = create_chat_model("openai:local-model")
    model.max_retries = 0
    with pytest.raises(raised):
        anyio.run(lambda: run_agent(INVESTIGATOR, model, logs_provider(), "<incident>{}</incident>"))


def test_a_warm_process_serves_a_second_incident(endpoint):
    """Each invocation of a warm function runs its own event loop (anyio.run) and builds its model, as the handlers
    do: the endpoint keeps connections alive, so a connection pooled in the first loop must not serve the second."""
    script, received = endpoint
    for _ in range(2):
        script += [
            (200, completion("get_recent_logs", {"lambda_name": "f"})),
            (200, completion("submit_diagnosis", diagnosis())),
        ]
        model = create_chat_model("openai:local-model")
        result = anyio.run(lambda m=model: run_agent(INVESTIGATOR, m, logs_provider(), "<incident>{}</incident>"))
        assert result.end_reason == "submitted"
    assert len(received) == 4


def test_one_model_serves_runs_in_two_event_loops(endpoint):
    script, _ = endpoint
    model = create_chat_model("openai:local-model")
    for _ in range(2):
        script += [(200, completion("submit_diagnosis", diagnosis(evidence=[], remediation_plan=[])))]
        result = anyio.run(lambda: run_agent(INVESTIGATOR, model, logs_provider(), "<incident>{}</incident>"))
        assert result.end_reason == "submitted"


def test_each_call_caps_the_models_output(endpoint):
    script, received = endpoint
    script += [(200, completion("submit_diagnosis", diagnosis(evidence=[], remediation_plan=[])))]
    anyio.run(lambda: run_agent(INVESTIGATOR, create_chat_model("openai:local-model"), logs_provider(), "<i/>"))
    # As the Bedrock path caps it (langchain-openai sends max_tokens under its current name).
    assert received[0]["max_completion_tokens"] == MAX_OUTPUT_TOKENS


@pytest.fixture
def stalling_endpoint(monkeypatch):
    """An endpoint that answers the first request only when the test ends (or after 30 s): a model that
    stalls. Any other request is answered at once."""
    released, received = threading.Event(), []

    def respond(path: str, request: dict) -> tuple[int, str, bytes]:
        received.append(request)
        if len(received) == 1:
            released.wait(30)
        body = completion("submit_diagnosis", diagnosis(evidence=[], remediation_plan=[]))
        return 200, "application/json", json.dumps(body).encode()

    with model_endpoint(respond) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "local")
        try:
            yield received
        finally:
            released.set()


def test_a_call_that_outlives_the_deadline_ends_the_run_and_is_counted(stalling_endpoint):
    """The agent's deadline, not the function's timeout, ends a stalled call: the run ends with what it has and
    the call is counted. Each call may run until half the deadline buffer is left (here 2 s - 1 s)."""
    limits = Limits(deadline_buffer_ms=2_000)
    run = anyio.run(
        lambda: run_agent(
            INVESTIGATOR,
            create_chat_model("openai:local-model"),
            logs_provider(),
            "<i/>",
            limits=limits,
            remaining_ms=lambda: 3_000,
        )
    )
    assert run.end_reason.startswith("deadline: the model did not answer within 2.0 s")
    assert run.payload is None and run.llm_calls == 1 and len(stalling_endpoint) == 1
    assert run.model_ms >= 1_900
