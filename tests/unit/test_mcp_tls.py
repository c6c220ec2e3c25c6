"""MCP sessions share one TLS context: httpx would load the CA bundle again for every client it makes."""

from __future__ import annotations

import ssl

import anyio
import pytest

from incident_responder.mcp_transport import client as mcp_client


class _Stop(Exception):
    pass


def test_sessions_load_the_ca_bundle_once_per_process(monkeypatch):
    loads = []
    original = ssl.SSLContext.load_verify_locations

    def counted(self, *args, **kwargs):
        loads.append(args or kwargs)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    mcp_client.forget_tls_context()
    clients = []

    def transport(url, http_client):  # the client the session was given; no server needed
        clients.append(http_client)
        raise _Stop

    monkeypatch.setattr(mcp_client, "streamable_http_client", transport)

    async def open_twice():
        for _ in range(2):
            with pytest.raises(_Stop):
                async with mcp_client.mcp_session("https://mcp.example/mcp", "key"):
                    pass

    anyio.run(open_twice)
    assert len(clients) == 2 and len(loads) == 1
    assert mcp_client.tls_context() is mcp_client.tls_context()
