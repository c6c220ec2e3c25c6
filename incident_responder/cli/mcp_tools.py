"""The project's MCP servers from the command line: ``responder mcp serve`` (run one) and ``mcp call`` (call a tool)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from incident_responder.cli.arguments import tcp_port


def _cmd_mcp_serve(args: argparse.Namespace) -> int:
    from incident_responder.mcp_transport.app import serve
    from incident_responder.mcp_transport.auth import ApiKeyUnavailableError

    try:
        serve(args.server, host=args.host, port=args.port)
    except ApiKeyUnavailableError as exc:
        print(f"responder mcp serve: {exc}", file=sys.stderr)
        return 2
    return 0


def _cmd_mcp_call(args: argparse.Namespace) -> int:
    import anyio

    from incident_responder.mcp_transport.client import mcp_session, tool_payload

    arguments = {}
    for pair in args.arguments:
        key, sep, value = pair.partition("=")
        if not sep:
            print(f"responder mcp call: expected key=value, got {pair!r}", file=sys.stderr)
            return 2
        arguments[key] = int(value) if value.isdigit() else value

    from incident_responder.agent.tools import classify_mcp_error
    from incident_responder.mcp_transport.client import SigV4Auth

    # MCP_AUTH=iam (as `responder lab up` exports) signs even when a key for another server is exported.
    key = args.api_key or (None if os.environ.get("MCP_AUTH") == "iam" else os.environ.get("MCP_API_KEY"))
    try:
        auth = None if key else SigV4Auth.from_session(args.url)  # deployed servers: IAM auth
    except ValueError as exc:
        print(f"responder mcp call: {exc}; or give --api-key for a self-hosted server", file=sys.stderr)
        return 2

    async def call() -> dict:
        async with mcp_session(args.url, key, auth=auth) as session:
            return tool_payload(await session.call_tool(args.tool, arguments))

    try:
        payload = anyio.run(call)
    except Exception as exc:  # noqa: BLE001 - transport and auth failures, typed as the agents type them
        raise classify_mcp_error(exc, args.url) from exc
    print(json.dumps(payload, indent=2))
    return 1 if payload.get("error") else 0


def add_commands(sub: Any) -> None:
    """``mcp serve`` and ``mcp call``, on ``responder``'s subcommands."""
    mcp = sub.add_parser("mcp", help="the project's MCP servers").add_subparsers(dest="mcp_command", required=True)
    p = mcp.add_parser("serve", help="run an MCP server (streamable HTTP, bearer key)")
    p.add_argument("server", choices=["diagnostics", "remediation"])
    p.add_argument("--host", default="127.0.0.1", help="(default: 127.0.0.1)")
    p.add_argument("--port", type=tcp_port, default=8081, help="(default: 8081)")
    p.set_defaults(handler=_cmd_mcp_serve)
    p = mcp.add_parser("call", help="call one tool on a running MCP server and print its result")
    p.add_argument("url", help="e.g. http://127.0.0.1:8081/mcp")
    p.add_argument("tool")
    p.add_argument("arguments", nargs="*", metavar="key=value")
    p.add_argument("--api-key", help="bearer key (default: $MCP_API_KEY; without one, requests are SigV4-signed)")
    p.set_defaults(handler=_cmd_mcp_call)
