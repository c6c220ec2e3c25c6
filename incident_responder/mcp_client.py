"""The one way this project opens an MCP client session: streamable HTTP with the bearer key.

Used by the agents' tool provider (:mod:`incident_responder.agent.tools`), ``responder mcp call`` and
the tests. Bounded: 10 s to connect, 10 s to initialize.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import httpx
from mcp.client.streamable_http import streamable_http_client

from mcp import ClientSession

CONNECT_TIMEOUT_SECONDS = 10.0
INITIALIZE_TIMEOUT_SECONDS = 10.0
CALL_TIMEOUT_SECONDS = 60.0


@asynccontextmanager
async def mcp_session(
    url: str, api_key: str | None, *, http_client: httpx.AsyncClient | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized MCP session; ``http_client`` lets tests route through an ASGI transport."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with AsyncExitStack() as stack:
        if http_client is None:
            http_client = await stack.enter_async_context(
                httpx.AsyncClient(
                    headers=headers,
                    timeout=httpx.Timeout(CALL_TIMEOUT_SECONDS, connect=CONNECT_TIMEOUT_SECONDS),
                    follow_redirects=True,
                )
            )
        else:  # the caller owns the client's lifetime
            http_client.headers.update(headers)
        read, write, _ = await stack.enter_async_context(streamable_http_client(url, http_client=http_client))
        session = await stack.enter_async_context(ClientSession(read, write))
        # Only a plain await inside the deadline: a cancel scope must not straddle the transport's task group.
        with anyio.fail_after(INITIALIZE_TIMEOUT_SECONDS):
            await session.initialize()
        yield session


def tool_payload(result: Any) -> dict[str, Any]:
    """The structured content of a tool result, or ``{"error": text}`` for a tool-level error."""
    if result.isError:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        return {"error": text.strip() or "tool error"}
    return result.structuredContent or {}
