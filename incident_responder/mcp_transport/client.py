"""The one way this project opens an MCP client session: streamable HTTP, signed or with a bearer key.

Deployed MCP servers sit behind Lambda function URLs with ``AuthType: AWS_IAM``: every request is signed
with SigV4 (service ``lambda``) using the caller's own role credentials, by botocore's signer, as an
``httpx.Auth``. Self-hosted servers (``responder mcp serve``) take a bearer key instead.
Used by the agents' tool provider (:mod:`incident_responder.agent.tools`) through :class:`McpConnection`,
by ``responder mcp call`` and the tests. Bounded: 10 s to connect, 10 s to initialize, 60 s per call.
A function URL whose function is at its concurrency limit answers HTTP 429: each request is sent again after a
backoff (:class:`ThrottleRetryTransport`), a few times, before it counts as a connection error.
"""

from __future__ import annotations

import random
import ssl
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, TypeVar

import anyio
import httpx
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

CONNECT_TIMEOUT_SECONDS = 10.0
INITIALIZE_TIMEOUT_SECONDS = 10.0
CALL_TIMEOUT_SECONDS = 60.0
# HTTP reads may last a little longer than a call: a read timeout in the transport ends the whole
# session, the call deadline (McpConnection.request) only the call that is late.
READ_TIMEOUT_MARGIN_SECONDS = 5.0
# HTTP 429 from a function URL (TooManyRequestsException: the function at its reserved or the account's
# concurrency). Waits of up to 0.5, 1, 2, 4 s (full jitter, or the Retry-After asked for, capped): about 7.5 s at
# most, inside the 10 s a session has to initialize. Still throttled, the state machine retries with its own backoff.
THROTTLE_RETRIES = 4
THROTTLE_BACKOFF_SECONDS = 0.5
THROTTLE_BACKOFF_CAP_SECONDS = 4.0

T = TypeVar("T")

_tls: ssl.SSLContext | None = None
_tls_lock = threading.Lock()


def tls_context() -> ssl.SSLContext:
    """The process's TLS context for MCP sessions, httpx's default one (certifi's CA bundle, or SSL_CERT_FILE /
    SSL_CERT_DIR). httpx builds a new one for every client, loading the CA bundle: about 25 ms of CPU for each
    session. Made at first use, never in a SnapStart snapshot; a restore drops it anyway (runtime_hooks)."""
    global _tls
    with _tls_lock:
        if _tls is None:
            _tls = httpx.create_ssl_context()
        return _tls


def forget_tls_context() -> None:
    global _tls
    with _tls_lock:
        _tls = None


class SigV4Auth(httpx.Auth):
    """Signs each request with SigV4 for a Lambda function URL (``AuthType: AWS_IAM``).

    Credentials are read per request (botocore refreshes role credentials itself). Only the host, the
    date, the session token and the payload hash are signed, so headers a proxy may rewrite cannot
    break the signature.
    """

    requires_request_body = True

    def __init__(self, credentials: Any, region: str, service: str = "lambda"):
        if credentials is None:
            raise ValueError("no AWS credentials to sign MCP requests with (SigV4)")
        self._credentials = credentials
        self.region = region
        self.service = service

    @classmethod
    def from_session(cls, url: str, region: str | None = None) -> SigV4Auth:
        """Credentials from boto3's chain; the region from the function URL's host, else the session's."""
        from incident_responder.core.aws import new_session

        session = new_session()
        region = region or region_of_function_url(url) or session.region_name
        if not region:
            raise ValueError(f"no region to sign requests to {url} with: set AWS_REGION")
        return cls(session.get_credentials(), region)

    def auth_flow(self, request: httpx.Request):
        from botocore.auth import SigV4Auth as BotocoreSigV4
        from botocore.awsrequest import AWSRequest

        unsigned = AWSRequest(method=request.method, url=str(request.url), data=request.content)
        BotocoreSigV4(self._credentials.get_frozen_credentials(), self.service, self.region).add_auth(unsigned)
        for header in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
            if header in unsigned.headers:
                request.headers[header] = unsigned.headers[header]
        yield request


class FunctionUrlThrottledError(httpx.TransportError):
    """Still HTTP 429 after :data:`THROTTLE_RETRIES` retries. A transport error, so the agents' tool provider
    names it McpConnectionError, which the state machine retries with backoff (McpInitError, a server that answers
    wrongly, is retried once)."""


class ThrottleRetryTransport(httpx.AsyncBaseTransport):
    """Sends a request again when the answer is HTTP 429, after a backoff; every other answer passes through.

    The request is sent unchanged (a SigV4 signature holds for five minutes); its body was read to be signed.
    """

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport,
        *,
        retries: int = THROTTLE_RETRIES,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        jitter: Callable[[], float] = random.random,
    ):
        self._inner, self._retries, self._sleep, self._jitter = inner, retries, sleep, jitter

    def _wait(self, attempt: int, response: httpx.Response) -> float:
        asked = response.headers.get("Retry-After", "")
        if asked.isdigit():
            return min(float(asked), THROTTLE_BACKOFF_CAP_SECONDS)
        return self._jitter() * min(THROTTLE_BACKOFF_CAP_SECONDS, THROTTLE_BACKOFF_SECONDS * 2**attempt)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        for attempt in range(self._retries + 1):
            response = await self._inner.handle_async_request(request)
            if response.status_code != 429:
                return response
            await response.aread()
            await response.aclose()
            if attempt < self._retries:
                await self._sleep(self._wait(attempt, response))
        raise FunctionUrlThrottledError(
            f"HTTP 429 from {request.url.host} (the function is at its concurrency limit) after {self._retries + 1} "
            "tries",
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def region_of_function_url(url: str) -> str | None:
    """``https://<id>.lambda-url.<region>.on.aws/...`` -> ``<region>``."""
    host = httpx.URL(url).host
    parts = host.split(".")
    if len(parts) >= 4 and parts[1] == "lambda-url":
        return parts[2]
    return None


@asynccontextmanager
async def mcp_session(
    url: str,
    api_key: str | None = None,
    *,
    auth: httpx.Auth | None = None,
    http_client: httpx.AsyncClient | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialized MCP session, authenticated by ``auth`` (e.g. SigV4) or a bearer ``api_key``.

    ``http_client`` lets tests route through an ASGI transport.
    """
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with AsyncExitStack() as stack:
        if http_client is None:
            http_client = await stack.enter_async_context(
                httpx.AsyncClient(
                    headers=headers,
                    auth=auth,
                    timeout=httpx.Timeout(
                        CALL_TIMEOUT_SECONDS + READ_TIMEOUT_MARGIN_SECONDS, connect=CONNECT_TIMEOUT_SECONDS
                    ),
                    follow_redirects=True,
                    verify=tls_context(),  # (for proxies taken from the environment)
                    transport=ThrottleRetryTransport(httpx.AsyncHTTPTransport(verify=tls_context())),
                )
            )
        else:  # the caller owns the client's lifetime
            http_client.headers.update(headers)
            if auth is not None:
                http_client.auth = auth
        read, write, _ = await stack.enter_async_context(streamable_http_client(url, http_client=http_client))
        session = await stack.enter_async_context(ClientSession(read, write))
        # Only a plain await inside the deadline: a cancel scope must not straddle the transport's task group.
        with anyio.fail_after(INITIALIZE_TIMEOUT_SECONDS):
            await session.initialize()
        yield session


class SessionLostError(Exception):
    """The MCP session ended under a request; ``__cause__`` is what ended it (e.g. ``httpx.ConnectError``)."""


class McpConnection:
    """An initialized MCP session served by a task of its own, for requests made from any other task.

    The SDK's streamable HTTP client sends each request from a task of the transport's task group; when
    that request fails (connection refused or reset, read timeout, HTTP 401) the group cancels the task
    that entered the transport, and the caller waiting for the answer is never told
    (modelcontextprotocol/python-sdk#1577, #3560). Entered by the agent's own task, that cancellation
    escaped as ``CancelledError`` or left the call waiting. Here the task that enters the transport is
    :meth:`serve`, run by the owner's task group: a failure ends only that task, is kept as
    :attr:`failure`, and ends every request still waiting with :class:`SessionLostError` from it.
    """

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        *,
        auth: httpx.Auth | None = None,
        http_client: httpx.AsyncClient | None = None,
    ):
        self.url = url
        self._open = lambda: mcp_session(url, api_key, auth=auth, http_client=http_client)
        self.session: ClientSession | None = None
        self.failure: Exception | None = None
        self._ready = anyio.Event()
        self._closing = anyio.Event()
        self._waiting: set[anyio.CancelScope] = set()

    async def serve(self) -> None:
        """Open the session and keep it until :meth:`close`; never raises what ends the session."""
        try:
            async with self._open() as session:
                self.session = session
                self._ready.set()
                await self._closing.wait()
        except Exception as exc:  # noqa: BLE001 - kept for the requests, which raise it as their cause
            self.failure = exc
        finally:
            self.session = None
            self._ready.set()
            for scope in self._waiting:
                scope.cancel()

    def close(self) -> None:
        self._closing.set()

    async def request(self, send: Callable[[ClientSession], Awaitable[T]], timeout: float | None = None) -> T:
        """``send(session)``, answered within ``timeout`` seconds (default: CALL_TIMEOUT_SECONDS).

        Raises TimeoutError when late (the session stays open), SessionLostError when the session ended.
        """
        timeout = CALL_TIMEOUT_SECONDS if timeout is None else timeout
        await self._ready.wait()  # bounded: serve() times out opening (connect and initialize)
        with anyio.CancelScope() as lost:  # cancelled by serve() when the session ends
            self._waiting.add(lost)
            try:
                if self.session is not None:
                    with anyio.fail_after(timeout):
                        return await send(self.session)
            except TimeoutError:
                raise TimeoutError(f"no answer within {timeout:g} s") from None
            finally:
                self._waiting.discard(lost)
        raise SessionLostError(f"the session to {self.url} ended") from self.failure


def tool_payload(result: Any) -> dict[str, Any]:
    """The structured content of a tool result, or ``{"error": text}`` for a tool-level error."""
    if result.isError:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        return {"error": text.strip() or "tool error"}
    return result.structuredContent or {}
