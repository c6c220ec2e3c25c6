"""HTTP connection pools for the OpenAI-compatible and Ollama models, one per event loop.

Each invocation of a warm function runs its agent in a new event loop (``anyio.run``), and closes that loop at the
end. httpx binds a pooled connection to the loop that opened it: handed to a later loop it fails with
``RuntimeError: Event loop is closed`` (httpx's maintainers: do not share an AsyncClient across event loops,
encode/httpx#2473). langchain-openai keeps one default AsyncClient per base URL for the whole process, so the second
incident of a warm function failed. :class:`LoopLocalTransport` gives each loop its own pool, and :func:`release`
closes the running loop's pools before the loop ends (:func:`incident_responder.agent.graph.run_agent` calls it
when a run ends: the runs one event loop serves follow one another, as each invocation runs one agent).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from types import ModuleType
from typing import Any

_transports: weakref.WeakSet[LoopLocalTransport] = weakref.WeakSet()
_lock = threading.Lock()  # the lab runs functions in threads, each with its own loop


class LoopLocalTransport:
    """An async httpx transport that sends each request through a pool of the running event loop's own.

    ``library`` is the httpx the client is built from: ``httpx`` (Ollama), or ``httpx2`` under openai>=3, whose
    client asserts that its transport's requests are its own types. No base class, so neither is imported here.
    """

    def __init__(self, library: ModuleType) -> None:
        self._library = library
        self._pools: dict[asyncio.AbstractEventLoop, Any] = {}
        with _lock:
            _transports.add(self)

    def _pool(self) -> Any:
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is None:
            with _lock:
                # A loop that ended without release() (an abandoned run): its connections cannot be closed any
                # more; dropping them lets their sockets be collected.
                for ended in [other for other in self._pools if other.is_closed()]:
                    del self._pools[ended]
                # openai's own pool defaults (httpx ignores a client's limits once it is given a transport).
                limits = self._library.Limits(max_connections=1000, max_keepalive_connections=100, keepalive_expiry=5.0)
                pool = self._pools[loop] = self._library.AsyncHTTPTransport(limits=limits)
        return pool

    async def handle_async_request(self, request: Any) -> Any:
        return await self._pool().handle_async_request(request)

    async def release(self) -> None:
        """Close the running loop's pool (the transport stays usable: a later loop opens a new one)."""
        with _lock:
            pool = self._pools.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            await pool.aclose()

    async def aclose(self) -> None:
        await self.release()

    async def __aenter__(self) -> LoopLocalTransport:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.release()


async def release() -> None:
    """Close every pool the running loop opened, while it can still close them."""
    with _lock:
        transports = list(_transports)
    for transport in transports:
        await transport.release()


def openai_http_client() -> Any:
    """The async HTTP client a ChatOpenAI gets instead of langchain-openai's process-wide one (its timeout is the
    agent's: :meth:`incident_responder.agent.spec.Limits.model_call_s`)."""
    import openai
    from langchain_openai._compat import httpx  # the httpx the SDK is built on, as langchain-openai documents

    transport: Any = LoopLocalTransport(httpx)  # an AsyncBaseTransport by its methods (see LoopLocalTransport)
    return openai.DefaultAsyncHttpxClient(transport=transport)


def ollama_transport() -> LoopLocalTransport:
    import httpx

    return LoopLocalTransport(httpx)
