"""What every MCP server of this project shares: transport, auth, health, and how to find and run it.

Servers speak streamable HTTP, stateless, with JSON responses (no session affinity needed, so they
run behind a Lambda function URL, a load balancer or in a container), require a bearer API key
(:mod:`incident_responder.mcp_auth`), and expose ``GET /health`` without auth.
The servers themselves live in the repository's ``mcp/<name>/server.py`` (a folder that is
deliberately not a Python package, so it never shadows the ``mcp`` SDK); :func:`load_server`
imports one by path.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.fastmcp import FastMCP
from starlette.requests import Request
from starlette.responses import JSONResponse

SERVERS_DIR = Path(__file__).resolve().parent.parent / "mcp"
SERVER_NAMES = ("diagnostics", "remediation")


def create_server(
    name: str,
    instructions: str,
    *,
    verifier: TokenVerifier | None = None,
    host: str = "127.0.0.1",
    public_url: str | None = None,
) -> FastMCP:
    """A FastMCP server with this project's transport and auth settings and a ``/health`` route."""
    from incident_responder.mcp_auth import ApiKeyVerifier

    mcp = FastMCP(
        name,
        instructions=instructions,
        token_verifier=verifier or ApiKeyVerifier(),
        auth=AuthSettings(
            issuer_url=public_url or f"http://{host}",
            resource_server_url=None,
            required_scopes=[],
        ),
        host=host,
        stateless_http=True,
        json_response=True,
        log_level="WARNING",
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

    from incident_responder.mcp_auth import resolve_api_key

    resolve_api_key()  # fail fast with a clear message when no key can be found
    server = load_server(name).build_server(host=host, **build_kwargs)
    uvicorn.run(server.streamable_http_app(), host=host, port=port, log_level="warning")


class FunctionUrlAdapter:
    """Serves an MCP server's ASGI app to Lambda function URL events (payload format 2.0).

    The MCP session manager may run only once per app, so it runs for the life of the execution
    environment in a background event loop; each invocation is one HTTP request through
    ``httpx.ASGITransport``. Stateless JSON responses mean no request depends on another.
    """

    def __init__(self, build: Any, timeout_seconds: float = 55.0):
        import asyncio
        import threading

        self._timeout = timeout_seconds
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

        future = asyncio.run_coroutine_threadsafe(self._forward(event), self._loop)
        return future.result(timeout=self._timeout)


def function_url_handler(name: str):
    """A Lambda handler serving MCP server ``name`` behind a function URL; the adapter starts on first use."""
    adapter: list[FunctionUrlAdapter] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if not adapter:
            # No loopback host check behind a function URL: the bearer key is the gate.
            adapter.append(FunctionUrlAdapter(lambda: load_server(name).build_server(host="0.0.0.0")))
        return adapter[0](event)

    return handler
