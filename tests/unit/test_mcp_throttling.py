"""A function URL whose function is at its concurrency limit answers HTTP 429 (TooManyRequestsException). The MCP
client waits and sends the request again, with backoff; still throttled, it is a connection error the state
machine retries with its own backoff, not a refused session retried once."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import pytest

from incident_responder.agent.errors import McpConnectionError
from incident_responder.agent.tools import classify_mcp_error
from incident_responder.mcp_transport import client as mcp_client

THROTTLED = {"Reason": "ReservedFunctionConcurrentInvocationLimitExceeded", "Type": "User"}


class Answers(httpx.AsyncBaseTransport):
    """Answers each request with the next status; records what was sent."""

    def __init__(self, statuses: list[int], headers: dict[str, str] | None = None):
        self.statuses, self.headers, self.bodies = list(statuses), headers or {}, []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(await request.aread())
        status = self.statuses.pop(0)
        body = THROTTLED if status == 429 else {"jsonrpc": "2.0", "id": 1, "result": {}}
        return httpx.Response(status, json=body, headers=self.headers if status == 429 else {})


def send(transport: httpx.AsyncBaseTransport) -> httpx.Response:
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=transport) as client:
            return await client.post("https://abc.lambda-url.us-east-1.on.aws/mcp", json={"method": "tools/list"})

    return anyio.run(go)


def retrying(inner: Answers, waits: list[float]) -> mcp_client.ThrottleRetryTransport:
    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    return mcp_client.ThrottleRetryTransport(inner, sleep=sleep, jitter=lambda: 1.0)


def test_a_throttled_request_is_sent_again_with_growing_waits():
    inner, waits = Answers([429, 429, 429, 200]), []
    response = send(retrying(inner, waits))
    assert response.status_code == 200
    assert len(inner.bodies) == 4 and len(set(inner.bodies)) == 1  # the same request, body and all
    assert waits == sorted(waits) and waits[0] < waits[-1]  # backoff
    assert all(w <= mcp_client.THROTTLE_BACKOFF_CAP_SECONDS for w in waits)


def test_retry_after_is_honoured_up_to_the_cap():
    waits = []
    send(retrying(Answers([429, 200], {"Retry-After": "2"}), waits))
    assert waits == [2.0]
    waits.clear()
    send(retrying(Answers([429, 200], {"Retry-After": "3600"}), waits))
    assert waits == [mcp_client.THROTTLE_BACKOFF_CAP_SECONDS]


def test_still_throttled_it_is_a_connection_error_the_state_machine_retries():
    inner, waits = Answers([429] * (mcp_client.THROTTLE_RETRIES + 1)), []
    with pytest.raises(mcp_client.FunctionUrlThrottledError, match="429") as raised:
        send(retrying(inner, waits))
    assert len(waits) == mcp_client.THROTTLE_RETRIES
    typed = classify_mcp_error(raised.value, "diagnostics")
    assert isinstance(typed, McpConnectionError)  # not McpInitError (retried once)
    asl = json.loads((Path(__file__).parents[2] / "statemachine" / "incident_lifecycle.asl.json").read_text())
    for state in ("Run investigator agent", "Run proposer agent", "Run critic agent"):
        (retrier,) = [r for r in asl["States"][state]["Retry"] if "McpConnectionError" in r["ErrorEquals"]]
        assert retrier["MaxAttempts"] >= 3 and retrier["BackoffRate"] > 1, state


def test_other_answers_pass_through_untouched():
    for status in (200, 401, 403, 500):
        inner, waits = Answers([status]), []
        assert send(retrying(inner, waits)).status_code == status
        assert waits == [] and len(inner.bodies) == 1


def test_sessions_the_client_opens_retry_throttled_requests(monkeypatch):
    clients = []

    class _Stop(Exception):
        pass

    def transport(url, http_client):
        clients.append(http_client)
        raise _Stop

    monkeypatch.setattr(mcp_client, "streamable_http_client", transport)

    async def open_one():
        with pytest.raises(_Stop):
            async with mcp_client.mcp_session("https://abc.lambda-url.us-east-1.on.aws/mcp", "key"):
                pass

    anyio.run(open_one)
    (client,) = clients
    assert isinstance(client._transport, mcp_client.ThrottleRetryTransport)
