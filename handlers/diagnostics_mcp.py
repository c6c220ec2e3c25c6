"""The diagnostics MCP server as a Lambda behind a function URL.

The server code is the same one ``responder mcp serve diagnostics`` runs (``mcp/diagnostics/server.py``,
built into the artifact); this entry point only adapts function URL events to its ASGI app.
"""

from incident_responder.core import runtime_hooks
from incident_responder.mcp_transport.app import function_url_handler

handler = function_url_handler("diagnostics")
runtime_hooks.register()  # no SnapStart here (template.yaml); turning it on needs no code change
