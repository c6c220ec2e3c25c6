"""JSON-RPC straight into the diagnostics MCP server (no port): the server with a bearer key, a raw call, a tools/call body, clients that remember which services were asked for."""

from __future__ import annotations

import anyio
import httpx

from incident_responder.mcp_transport.app import load_server
from incident_responder.mcp_transport.auth import ApiKeyVerifier
from tests.conftest import asgi_client

KEY = "test-key-0123456789"


URL = "http://127.0.0.1:8000/mcp"


JSON_RPC_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def build(clients, key: str = KEY):
    return load_server("diagnostics").build_server(clients=clients, verifier=ApiKeyVerifier(lambda: key))


def call_raw(server, token: str | None, body: dict) -> httpx.Response:
    headers = dict(JSON_RPC_HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"

    async def go() -> httpx.Response:
        async with asgi_client(server) as client:
            return await client.post("/mcp", json=body, headers=headers)

    return anyio.run(go)


def tool_call(name: str, arguments: dict) -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


class Recording:
    """Real lab clients that remember which services were asked for."""

    def __init__(self, clients):
        self.clients, self.services = clients, []

    def get(self, service):
        self.services.append(service)
        return self.clients.get(service)
