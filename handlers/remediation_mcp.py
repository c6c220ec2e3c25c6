"""The remediation MCP server as a Lambda behind a function URL (same code as ``responder mcp serve remediation``)."""

from __future__ import annotations

from typing import Any

from incident_responder.mcp_app import FunctionUrlAdapter, load_server

_adapter: FunctionUrlAdapter | None = None


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    global _adapter
    if _adapter is None:
        _adapter = FunctionUrlAdapter(lambda: load_server("remediation").build_server(host="0.0.0.0"))
    return _adapter(event)
