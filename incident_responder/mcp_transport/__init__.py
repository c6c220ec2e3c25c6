"""INVESTIGATING and PROPOSING: how the agents reach the project's MCP servers, and how those servers run.

app     what every MCP server shares: transport, auth, health; how to find one and run it
auth    the bearer API key of a self-hosted server (an SSM SecureString)
client  the one way to open an MCP client session: streamable HTTP, SigV4-signed or with a bearer key
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "ApiKeyUnavailableError",
    "McpConnection",
    "SigV4Auth",
    "create_server",
    "function_url_handler",
    "resolve_api_key",
    "serve",
    "tool_payload",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "app": ["create_server", "function_url_handler", "serve"],
        "auth": ["ApiKeyUnavailableError", "resolve_api_key"],
        "client": ["McpConnection", "SigV4Auth", "tool_payload"],
    },
)
