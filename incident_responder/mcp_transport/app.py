"""What every MCP server of this project shares: transport, auth, health, and how to find and run it.

Servers speak streamable HTTP, stateless, with JSON responses (no session affinity needed, so they
run behind a Lambda function URL, a load balancer or in a container) and expose ``GET /health``.
Two ways in: deployed, behind a function URL with ``AuthType: AWS_IAM`` (Lambda checks the SigV4
signature and the caller's ``lambda:InvokeFunctionUrl`` permission before the function runs; the
adapter refuses any event that did not come through that check); self-hosted (``responder mcp
serve``), with a bearer API key (:mod:`incident_responder.mcp_transport.auth`).
The servers themselves live in the repository's ``mcp/<name>/server.py`` (a folder that is
deliberately not a Python package, so it never shadows the ``mcp`` SDK); :func:`load_server`
imports one by path.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from mcp.server.auth.middleware.bearer_auth import RequireAuthMiddleware
from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.fastmcp import FastMCP
from mcp.server.transport_security import RequestBodyLimitMiddleware
from mcp.types import INVALID_REQUEST, PARSE_ERROR, CallToolResult, TextContent
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SERVERS_DIR = Path(__file__).resolve().parents[2] / "mcp"
SERVER_NAMES = ("diagnostics", "remediation")
# A tool call is a few levels deep; anything much deeper is no request of ours and only costs the parser.
MAX_JSON_DEPTH = 32


def _rpc_error(status: int, code: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(
        {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}, status, headers=headers
    )


def _depth(value: Any) -> int:
    """How deeply arrays and objects nest in a parsed JSON value (iterative: no recursion to exhaust)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


class JsonRpcGate:
    """In front of the MCP endpoint (behind its auth), what the SDK would answer with a 500 and a traceback, or
    never answer, gets a JSON-RPC error at once:

    * a body Python's parser refuses for other reasons than syntax (nested past the recursion limit, an integer
      of more than 4300 digits, bytes that are not UTF-8), or nested deeper than :data:`MAX_JSON_DEPTH`: 400,
      Parse error (a syntax error is left to the SDK, which answers it so);
    * ``GET`` (a stream for server-initiated messages) and ``DELETE`` (ending a session): a stateless JSON server
      has neither, and the SDK held a GET open forever. 405, as the streamable HTTP transport specifies.
    """

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "DELETE", "POST"):
            await self.app(scope, receive, send)
            return
        if scope["method"] != "POST":
            refusal = "this stateless server offers no event stream and no session: POST JSON-RPC messages"
            await _rpc_error(405, INVALID_REQUEST, refusal, {"Allow": "POST"})(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
        problem = None
        try:
            if _depth(json.loads(body)) > MAX_JSON_DEPTH:
                problem = f"nested deeper than {MAX_JSON_DEPTH} levels"
        except json.JSONDecodeError:
            pass  # a syntax error: the SDK's own Parse error
        except RecursionError:
            problem = "nested too deeply to parse"
        except ValueError as exc:  # an integer past Python's 4300 digits, bytes that are not UTF-8
            problem = str(exc).split(";")[0]
        if problem is not None:
            await _rpc_error(400, PARSE_ERROR, f"Parse error: {problem}")(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


class ProjectMCP(FastMCP):
    """FastMCP whose streamable HTTP endpoint sits behind :class:`JsonRpcGate`, and whose tool results and errors
    leave it redacted (:mod:`incident_responder.redaction`): a secret in a log line, a tag or an error message never
    reaches the agent, its model or a store. A structured result says what was redacted in ``redacted`` (kind ->
    count), left out when nothing was."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        from mcp.server.fastmcp.exceptions import ToolError

        from incident_responder.redaction.redactor import default_redactor

        redactor = default_redactor()
        try:
            result = await super().call_tool(name, arguments)
        except Exception as exc:
            # The SDK answers an exception with its message as the result's text: that text is redacted too.
            raise ToolError(redactor.text(str(exc))) from None
        if isinstance(result, tuple):  # (content, structured): the SDK writes the text again from the structured
            result = result[1]
        if isinstance(result, dict):
            structured, counts = redactor.value(result)
            structured = {**structured, "redacted": counts} if counts else structured
            # Returned whole, so the SDK's low-level server passes it on instead of checking it against the tool's
            # output schema with jsonschema.validate, which parses the schema against its metaschema again at every
            # call: the tool's own model validated the result, redaction only rewrites text within its strings, and
            # the agent checks every result against the schema (agent/executor.py) before its model sees it.
            text = TextContent(type="text", text=json.dumps(structured, indent=2))
            return CallToolResult(content=[text], structuredContent=structured)
        return [
            block.model_copy(update={"text": redactor.text(block.text)}) if isinstance(block, TextContent) else block
            for block in result
        ]

    def streamable_http_app(self) -> Starlette:
        app = super().streamable_http_app()
        for route in app.routes:
            if isinstance(route, Route) and route.path == self.settings.streamable_http_path:
                # Inside RequireAuthMiddleware when there is one: a caller without the key still gets 401 first.
                holder: Route | RequireAuthMiddleware = (
                    route.app if isinstance(route.app, RequireAuthMiddleware) else route
                )
                # The SDK's body limit first: the gate reads the whole body before the SDK would.
                holder.app = RequestBodyLimitMiddleware(JsonRpcGate(holder.app), self.settings.max_request_body_size)
        return app


def create_server(
    name: str,
    instructions: str,
    *,
    auth: Literal["iam", "api_key"] = "api_key",
    verifier: TokenVerifier | None = None,
    host: str = "127.0.0.1",
    public_url: str | None = None,
) -> FastMCP:
    """A FastMCP server with this project's transport settings and a ``/health`` route.

    ``api_key``: the app itself demands the bearer key. ``iam``: the app has no auth of its own and
    must only be served by :class:`FunctionUrlAdapter` behind an ``AWS_IAM`` function URL.
    """
    kwargs: dict[str, Any] = {}
    if auth == "api_key":
        from incident_responder.mcp_transport.auth import ApiKeyVerifier

        kwargs = {
            "token_verifier": verifier or ApiKeyVerifier(),
            "auth": AuthSettings(
                issuer_url=public_url or f"http://{host}", resource_server_url=None, required_scopes=[]
            ),
        }
    mcp = ProjectMCP(
        name,
        instructions=instructions,
        host=host,
        stateless_http=True,
        json_response=True,
        log_level="WARNING",
        **kwargs,
    )

    @mcp.custom_route("/health", methods=["GET"])
    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "server": name})

    return mcp


def load_server(name: str) -> ModuleType:
    """Import ``mcp/<name>/server.py`` from the source tree."""
    if name not in SERVER_NAMES:
        raise ValueError(f"unknown MCP server {name!r}; choose one of: {', '.join(SERVER_NAMES)}")
    path = SERVERS_DIR / name / "server.py"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: run from a source checkout (pip install -e .)")
    module_name = f"incident_responder_mcp_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def start_server_process(name: str, port: int, env: dict[str, str], timeout: float = 30.0):
    """``responder mcp serve NAME`` as its own process, returned once it answers on ``/health``."""
    import subprocess
    import time

    import httpx

    proc = subprocess.Popen(
        [sys.executable, "-m", "incident_responder.cli", "mcp", "serve", name, "--port", str(port)], env=env
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"MCP server {name} exited with code {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.terminate()
    raise RuntimeError(f"MCP server {name} did not become healthy on port {port}")


def serve(name: str, host: str = "127.0.0.1", port: int = 8080, **build_kwargs: Any) -> None:
    """Run one server with uvicorn until interrupted (what ``responder mcp serve`` does)."""
    import uvicorn

    from incident_responder.mcp_transport.auth import resolve_api_key
    from incident_responder.redaction.redactor import default_redactor

    resolve_api_key()  # fail fast with a clear message when no key can be found
    default_redactor()  # and when REDACTION_PATTERNS is not usable
    server = load_server(name).build_server(host=host, **build_kwargs)
    uvicorn.run(server.streamable_http_app(), host=host, port=port, log_level="warning")


def iam_caller(event: dict[str, Any]) -> dict[str, Any] | None:
    """The IAM identity Lambda put in a function URL event after checking the request's SigV4 signature."""
    iam = ((event.get("requestContext") or {}).get("authorizer") or {}).get("iam")
    return iam if isinstance(iam, dict) and iam.get("accessKey") and iam.get("userArn") else None


FORBIDDEN = {
    "statusCode": 403,
    "headers": {"content-type": "application/json"},
    "body": '{"Message":"Forbidden"}',
    "isBase64Encoded": False,
}


class FunctionUrlAdapter:
    """Serves an MCP server's ASGI app to Lambda function URL events (payload format 2.0).

    The MCP session manager may run only once per app, so it runs for the life of the execution
    environment in a background event loop; each invocation is one HTTP request through
    ``httpx.ASGITransport``. Stateless JSON responses mean no request depends on another. With
    ``require_iam``, an event without the IAM identity an ``AWS_IAM`` function URL adds is refused
    (403) before the app sees it: a misconfigured URL (``AuthType: NONE``) fails closed.
    """

    def __init__(self, build: Any, *, require_iam: bool, timeout_seconds: float = 55.0):
        import asyncio
        import threading

        self._timeout = timeout_seconds
        self._require_iam = require_iam
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server = build()
        self._app = self._server.streamable_http_app()
        threading.Thread(target=self._run, daemon=True, name="mcp-session-manager").start()
        if not self._ready.wait(10):
            raise RuntimeError("MCP session manager did not start")

    def _run(self) -> None:
        import asyncio

        async def main() -> None:
            async with self._server.session_manager.run():
                self._ready.set()
                await asyncio.Event().wait()  # until the execution environment ends

        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(main())

    async def _forward(self, event: dict[str, Any]) -> dict[str, Any]:
        import base64

        import httpx

        http = event.get("requestContext", {}).get("http", {})
        headers = {k: v for k, v in (event.get("headers") or {}).items()}
        body = event.get("body") or ""
        content = base64.b64decode(body) if event.get("isBase64Encoded") else body.encode()
        host = headers.get("host", "lambda-url")
        path = event.get("rawPath") or http.get("path") or "/"
        query = event.get("rawQueryString") or ""
        transport = httpx.ASGITransport(app=self._app)
        async with httpx.AsyncClient(transport=transport, base_url=f"https://{host}") as client:
            response = await client.request(
                http.get("method", "GET"), path + (f"?{query}" if query else ""), headers=headers, content=content
            )
        return {
            "statusCode": response.status_code,
            "headers": {k: v for k, v in response.headers.items() if k.lower() != "content-length"},
            "body": response.text,
            "isBase64Encoded": False,
        }

    def __call__(self, event: dict[str, Any]) -> dict[str, Any]:
        import asyncio

        if self._require_iam and iam_caller(event) is None:
            return dict(FORBIDDEN)
        future = asyncio.run_coroutine_threadsafe(self._forward(event), self._loop)
        return future.result(timeout=self._timeout)


def function_url_handler(name: str):
    """A Lambda handler serving MCP server ``name`` behind a function URL; the adapter starts on first use.

    Its environment (:class:`incident_responder.core.settings.McpServerSettings`) is validated at cold start.
    """
    from incident_responder.core.settings import McpServerSettings, at_cold_start

    settings = at_cold_start(McpServerSettings)
    adapters: dict[tuple, FunctionUrlAdapter] = {}

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        config = settings()
        key = (config.mcp_auth, config.baseline_table, config.incident_state_table, config.memory_days)
        if key not in adapters:
            # The diagnostics server's get_incident_history reads the histories (history#<function> items only).
            memory = (
                {"state_table": config.incident_state_table, "memory_days": config.memory_days}
                if name == "diagnostics"
                else {}
            )

            def build() -> FastMCP:
                return load_server(name).build_server(
                    host="0.0.0.0", auth=config.mcp_auth, baseline_table=config.baseline_table, **memory
                )

            adapters[key] = FunctionUrlAdapter(build, require_iam=config.mcp_auth == "iam")
        return adapters[key](event)

    return handler
