"""The diagnostics MCP server as a Lambda behind a function URL.

The server code is the same one ``responder mcp serve diagnostics`` runs (``mcp/diagnostics/server.py``,
built into the artifact); this entry point only adapts function URL events to its ASGI app.
"""

from __future__ import annotations

from typing import Any

from incident_responder.mcp_app import FunctionUrlAdapter, load_server

_adapter: FunctionUrlAdapter | None = None


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    global _adapter
    if _adapter is None:
        # No loopback host check behind a function URL: the bearer key is the gate.
        _adapter = FunctionUrlAdapter(lambda: load_server("diagnostics").build_server(host="0.0.0.0"))
    return _adapter(event)
