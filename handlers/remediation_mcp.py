"""The remediation MCP server as a Lambda behind a function URL (same code as ``responder mcp serve remediation``)."""

from incident_responder.core import runtime_hooks
from incident_responder.mcp_transport.app import function_url_handler

handler = function_url_handler("remediation")
runtime_hooks.register()  # no SnapStart here (template.yaml); turning it on needs no code change
