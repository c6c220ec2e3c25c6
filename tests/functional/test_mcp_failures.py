"""MCP failures in the middle of an agent run, against a real server process over HTTP.

Whatever happens to the transport (the server killed between two tool calls, a response that never
ends, credentials refused mid-session), the run ends within seconds with a typed error (a plain
``Exception`` the state machine catches by name), never with ``asyncio.CancelledError`` or a hang.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest
from pydantic import BaseModel

import incident_responder.mcp_transport.client as mcp_client
from incident_responder.agent.errors import McpAuthError, McpConnectionError
from incident_responder.agent.graph import run_agent_over_mcp
from incident_responder.agent.spec import AgentSpec
from incident_responder.agent.tools import McpServerConfig, McpToolProvider
from tests.fakes import ScriptedChatModel, call

KEY = "failures-test-key"

# A server configured as the project's own (stateless, JSON responses, bearer key, /health) with tools
# to call, one that never answers, one that ends the server while it is called, one that revokes the
# key, and a middleware that answers ``stall_body`` with headers and half a body, then nothing.
SERVER = """
import os
import sys
import anyio
import uvicorn
from incident_responder.mcp_transport.app import create_server
from incident_responder.mcp_transport.auth import ApiKeyVerifier

keys = {"current": sys.argv[2]}
mcp = create_server("probe", "tools for failure tests", verifier=ApiKeyVerifier(lambda: keys["current"]))

@mcp.tool()
def first() -> dict[str, int]:
    return {"n": 1}

@mcp.tool()
def second() -> dict[str, int]:
    return {"n": 2}

@mcp.tool()
async def stall() -> dict[str, int]:
    await anyio.sleep(3600)
    return {}

@mcp.tool()
def stall_body() -> dict[str, int]:
    return {}

@mcp.tool()
def crash() -> dict[str, int]:
    os._exit(1)

@mcp.tool()
def revoke() -> dict[str, int]:
    keys["current"] = "rotated-away"
    return {"revoked": 1}

app = mcp.streamable_http_app()

async def gate(scope, receive, send):
    if scope["type"] != "http" or scope["method"] != "POST":
        return await app(scope, receive, send)
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    if b'"stall_body"' in body:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"jsonrpc": "2.0", ', "more_body": True})
        await anyio.sleep(3600)
    replayed = False

    async def replay():
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    await app(scope, replay, send)

uvicorn.run(gate, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server():
    """The probe server in its own process; ``server.kill()`` ends it as a crash would."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(port), KEY], env=dict(os.environ))
    deadline = time.monotonic() + 30
    while True:
        assert proc.poll() is None, f"probe server exited with {proc.returncode}"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            assert time.monotonic() < deadline, "probe server did not start"
            time.sleep(0.1)
    proc.url = f"http://127.0.0.1:{port}/mcp"
    yield proc
    proc.kill()
    proc.wait(timeout=10)


@pytest.fixture
def config(server, monkeypatch) -> McpServerConfig:
    monkeypatch.setenv("PROBE_KEY", KEY)
    return McpServerConfig(name="probe", url=server.url, auth="api_key", api_key_env="PROBE_KEY")


@pytest.fixture(autouse=True)
def short_call_timeout(monkeypatch):
    monkeypatch.setattr(mcp_client, "CALL_TIMEOUT_SECONDS", 1.5)


def outcome(run: Callable[[], Any]) -> tuple[BaseException | None, float]:
    """What ``run`` raised (anything, CancelledError included) and how long it took, as deployed: anyio.run."""
    started = time.monotonic()
    try:
        anyio.run(run)
    except BaseException as exc:  # noqa: BLE001 - the test is about which exception escapes
        return exc, time.monotonic() - started
    return None, time.monotonic() - started


def assert_typed(error: BaseException | None, seconds: float, expected: type[Exception], cause: str) -> None:
    assert type(error) is expected, f"{type(error).__name__}: {error}"
    assert seconds < 8, f"took {seconds:.1f} s"
    assert cause in str(error)


# -- the agent loop, as the handlers run it --------------------------------------------------------
class Done(BaseModel):
    note: str


PROBE = AgentSpec(
    name="probe",
    system_prompt="Call tools, then submit.",
    terminal_tool="submit",
    terminal_description="Finish.",
    payload_model=Done,
)


class HookedModel(ScriptedChatModel):
    """A scripted model that runs ``hooks[turn]`` before answering that (0-based) turn."""

    hooks: dict[int, Callable[[], None]] = {}

    def _generate(self, messages, stop=None, run_manager=None, tools=None, **kwargs):
        if hook := self.hooks.get(len(self.seen)):
            hook()
        return super()._generate(messages, stop=stop, run_manager=run_manager, tools=tools, **kwargs)


def agent_run(config: McpServerConfig, first: str, second: str, hooks: dict[int, Callable[[], None]] | None = None):
    """The model calls ``first``, then ``second``, then submits."""
    model = HookedModel(
        responses=[call(first, {}, 0), call(second, {}, 1), call("submit", {"note": "done"}, 2)],
        hooks=hooks or {},
    )
    return lambda: run_agent_over_mcp(PROBE, "go", model=model, servers=[config])


def kill(server: subprocess.Popen) -> Callable[[], None]:
    def hook() -> None:
        server.kill()
        server.wait(timeout=10)

    return hook


def test_a_run_completes_when_nothing_fails(config):
    run = anyio.run(agent_run(config, "first", "second"))
    assert run.end_reason == "submitted" and run.tools_called == ["first", "second"]


def test_server_killed_between_two_tool_calls_raises_mcp_connection_error(server, config):
    error, seconds = outcome(agent_run(config, "first", "second", hooks={1: kill(server)}))
    assert_typed(error, seconds, McpConnectionError, "ConnectError")


def test_server_dying_during_a_call_raises_mcp_connection_error(config):
    error, seconds = outcome(agent_run(config, "first", "crash"))
    assert_typed(error, seconds, McpConnectionError, "RemoteProtocolError")


@pytest.mark.parametrize("tool", ["stall", "stall_body"])
def test_a_stalled_response_raises_mcp_connection_error_after_the_call_timeout(config, tool):
    error, seconds = outcome(agent_run(config, "first", tool))
    assert_typed(error, seconds, McpConnectionError, "1.5 s")
    assert seconds >= 1.5


def test_credentials_refused_mid_session_raise_mcp_auth_error(config):
    error, seconds = outcome(agent_run(config, "revoke", "first"))
    assert_typed(error, seconds, McpAuthError, "HTTP 401")


# -- the provider on its own -----------------------------------------------------------------------
def provider_calls(config: McpServerConfig, *tools: str, hooks: dict[int, Callable[[], None]] | None = None):
    """Calls ``tools`` in turn on one provider, running ``hooks[i]`` before the i-th call."""

    async def go():
        async with McpToolProvider([config]) as provider:
            for i, name in enumerate(tools):
                if hook := (hooks or {}).get(i):
                    hook()
                await provider.call_tool(name, {})

    return go


def test_provider_server_killed_between_calls(server, config):
    error, seconds = outcome(provider_calls(config, "first", "second", hooks={1: kill(server)}))
    assert_typed(error, seconds, McpConnectionError, "ConnectError")


@pytest.mark.parametrize("tool", ["stall", "stall_body"])
def test_provider_stalled_call(config, tool):
    error, seconds = outcome(provider_calls(config, "first", tool))
    assert_typed(error, seconds, McpConnectionError, "1.5 s")


def test_provider_credentials_refused_mid_session(config):
    error, seconds = outcome(provider_calls(config, "revoke", "first"))
    assert_typed(error, seconds, McpAuthError, "HTTP 401")


def test_provider_session_stays_usable_after_a_stalled_call(config):
    """A call that timed out ends that call only: the next one on the same session is answered."""
    answers = []

    async def go():
        async with McpToolProvider([config]) as provider:
            with pytest.raises(McpConnectionError):
                await provider.call_tool("stall", {})
            answers.append(await provider.call_tool("second", {}))

    anyio.run(go)
    assert answers[0].structured == {"n": 2}


# -- credentials we do not have: refused before any request, never retried -------------------------
def test_an_unavailable_api_key_raises_mcp_auth_error(monkeypatch):
    from incident_responder.mcp_transport import auth as mcp_auth

    def unavailable(*args, **kwargs):
        raise mcp_auth.ApiKeyUnavailableError("SSM parameter '/incident-response/mcp-api-key' is empty")

    monkeypatch.setattr(mcp_auth, "resolve_api_key", unavailable)
    config = McpServerConfig(name="probe", url="http://127.0.0.1:9/mcp", auth="api_key")
    error, _ = outcome(lambda: McpToolProvider([config]).__aenter__())
    assert type(error) is McpAuthError and "mcp-api-key" in str(error)


def test_no_aws_credentials_to_sign_with_raises_mcp_auth_error(monkeypatch):
    import boto3

    monkeypatch.setattr(boto3.Session, "get_credentials", lambda self: None)
    config = McpServerConfig(name="probe", url="https://abc.lambda-url.us-east-1.on.aws/mcp", auth="iam")
    error, _ = outcome(lambda: McpToolProvider([config]).__aenter__())
    assert type(error) is McpAuthError and "no AWS credentials" in str(error)
