"""`responder doctor --model openai:<id>` and `ollama:<id>` against local endpoints: each answers GETs (the model
list) and POSTs (a chat call) as the real servers do, with a key check for the OpenAI-compatible one."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from incident_responder.cli.doctor import FAIL, PASS, WARN, check_model
from tests.fakes import reply, serving

Route = Callable[[str, str, dict[str, str]], tuple[int, Any]]


@contextmanager
def endpoint(route: Route) -> Iterator[str]:
    """A server on loopback: ``route(method, path, headers)`` gives the status and JSON body of each answer."""

    class Handler(BaseHTTPRequestHandler):
        def answer(self, method: str) -> None:
            if length := int(self.headers.get("Content-Length") or 0):
                self.rfile.read(length)
            status, body = route(method, self.path, dict(self.headers))
            reply(self, status, "application/json", json.dumps(body).encode())

        def do_GET(self):  # noqa: N802 - http.server's API
            self.answer("GET")

        def do_POST(self):  # noqa: N802 - http.server's API
            self.answer("POST")

        def log_message(self, *args):
            pass

    with serving(Handler) as url:
        yield url


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def openai_route(method: str, path: str, headers: dict[str, str]) -> tuple[int, Any]:
    if headers.get("Authorization") != "Bearer good-key":
        return 401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
    if (method, path) == ("GET", "/v1/models"):
        return 200, {"object": "list", "data": [{"id": "local-model", "object": "model"}, {"id": "other"}]}
    if (method, path) == ("POST", "/v1/chat/completions"):
        choice = {"index": 0, "message": {"role": "assistant", "content": "OK"}, "finish_reason": "stop"}
        return 200, {"choices": [choice], "usage": {"prompt_tokens": 12, "completion_tokens": 1}}
    return 404, {"error": {"message": f"no route {path}"}}


def named(checks) -> dict[str, Any]:
    return {c.name: c for c in checks}


@pytest.fixture
def openai_server(monkeypatch):
    with endpoint(openai_route) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "good-key")
        yield url


def test_a_working_openai_compatible_endpoint_passes(openai_server):
    checks = named(check_model("openai:local-model"))
    for name in ("model endpoint", "model key", "model exists", "model answers"):
        assert checks[name].status == PASS, checks[name].line()
    assert "12 tokens in" in checks["model answers"].detail


def test_openai_compatible_failures_each_with_its_fix(openai_server, monkeypatch):
    # A model the endpoint does not serve: named, with those it does.
    checks = named(check_model("openai:gpt-nothing"))
    assert checks["model exists"].status == FAIL and "local-model" in checks["model exists"].detail
    assert "model answers" not in checks
    # A key the endpoint refuses.
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    checks = named(check_model("openai:local-model"))
    assert checks["model endpoint"].status == PASS
    assert checks["model key"].status == FAIL and "401" in checks["model key"].detail
    assert "OPENAI_API_KEY" in checks["model key"].fix
    # No key at all.
    monkeypatch.delenv("OPENAI_API_KEY")
    checks = named(check_model("openai:local-model"))
    assert checks["model key"].status == FAIL and "OPENAI_API_KEY" in checks["model key"].fix
    # Nothing listening there.
    monkeypatch.setenv("OPENAI_API_KEY", "good-key")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{closed_port()}/v1")
    checks = named(check_model("openai:local-model"))
    assert checks["model endpoint"].status == FAIL and "OPENAI_BASE_URL" in checks["model endpoint"].fix
    # A URL that is not one (no scheme, a broken host): said, no traceback.
    for url in ("localhost:8000/v1", "http://[::1"):
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        assert named(check_model("openai:local-model"))["model endpoint"].status == FAIL, url


def test_an_endpoint_that_lists_no_models_is_checked_by_its_chat_call(monkeypatch):
    def route(method, path, headers):
        if method == "POST":
            return 404, {"error": {"message": "The model `missing` does not exist"}}
        return 404, {"error": {"message": "not found"}}

    with endpoint(route) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "any")
        checks = named(check_model("openai:missing"))
    assert checks["model exists"].status == WARN
    assert checks["model answers"].status == FAIL and "does not exist" in checks["model answers"].detail


def ollama_route(method: str, path: str, headers: dict[str, str]) -> tuple[int, Any]:
    if (method, path) == ("GET", "/api/tags"):
        return 200, {"models": [{"name": "llama3.2:latest", "model": "llama3.2:latest"}, {"name": "qwen2.5:0.5b"}]}
    return 404, {"error": "not found"}


def test_ollama_endpoint_and_model_are_checked(monkeypatch):
    with endpoint(ollama_route) as url:
        monkeypatch.setenv("OLLAMA_HOST", url.removeprefix("http://"))  # Ollama's own form: host:port
        checks = named(check_model("ollama:llama3.2"))  # no tag: Ollama's :latest
        assert checks["model endpoint"].status == PASS and checks["model exists"].status == PASS
        assert named(check_model("ollama:qwen2.5:0.5b"))["model exists"].status == PASS
        missing = named(check_model("ollama:mistral"))["model exists"]
        assert missing.status == FAIL and missing.fix == "ollama pull mistral" and "llama3.2" in missing.detail
    monkeypatch.setenv("OLLAMA_HOST", closed_port())
    down = named(check_model("ollama:llama3.2"))["model endpoint"]
    assert down.status == FAIL and "OLLAMA_HOST" in down.fix
