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
SERVER_NAMES = ("diagnostics",)


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


def serve(name: str, host: str = "127.0.0.1", port: int = 8080, **build_kwargs: Any) -> None:
    """Run one server with uvicorn until interrupted (what ``responder mcp serve`` does)."""
    import uvicorn

    from incident_responder.mcp_auth import resolve_api_key

    resolve_api_key()  # fail fast with a clear message when no key can be found
    server = load_server(name).build_server(host=host, **build_kwargs)
    uvicorn.run(server.streamable_http_app(), host=host, port=port, log_level="warning")
