"""Bearer API key for the project's MCP servers.

The key lives in an SSM SecureString (name from ``MCP_API_KEY_PARAMETER``, default
``/incident-response/mcp-api-key``), read through Powertools Parameters with caching so a rotated key
is picked up within ``max_age`` seconds. ``MCP_API_KEY`` in the environment overrides it for local runs.
The verifier plugs into the MCP SDK's ``token_verifier``: a missing or wrong token gets a 401.
Agents (clients) read the key through this module too, so it loads MCP's server side only in a server.
"""

from __future__ import annotations

import hmac
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken

DEFAULT_API_KEY_PARAMETER = "/incident-response/mcp-api-key"
KEY_CACHE_SECONDS = 300


class ApiKeyUnavailableError(RuntimeError):
    """Neither ``MCP_API_KEY`` nor the SSM parameter could provide the API key."""


def api_key_parameter_name() -> str:
    return os.environ.get("MCP_API_KEY_PARAMETER", DEFAULT_API_KEY_PARAMETER)


def resolve_api_key(parameter_name: str | None = None, env_var: str = "MCP_API_KEY") -> str:
    """The current API key: the environment override, else the (cached) SSM SecureString."""
    override = os.environ.get(env_var)
    if override:
        return override
    name = parameter_name or api_key_parameter_name()
    try:
        from aws_lambda_powertools.utilities import parameters

        value = parameters.get_parameter(name, decrypt=True, max_age=KEY_CACHE_SECONDS)
    except Exception as exc:  # any SDK or permission failure means "no key", said clearly
        raise ApiKeyUnavailableError(
            f"cannot read the MCP API key from SSM parameter {name!r} ({type(exc).__name__}: {exc}); "
            f"create it as a SecureString or set {env_var}"
        ) from exc
    if not value:
        raise ApiKeyUnavailableError(f"SSM parameter {name!r} is empty")
    return str(value)


class ApiKeyVerifier:
    """Accepts exactly the configured key, compared in constant time (the SDK's ``TokenVerifier`` protocol)."""

    def __init__(self, key_source=resolve_api_key):
        self._key_source = key_source

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            expected = self._key_source()
        except ApiKeyUnavailableError:
            return None  # fail closed
        if token and hmac.compare_digest(token.encode(), expected.encode()):
            from mcp.server.auth.provider import AccessToken

            return AccessToken(token=token, client_id="api-key", scopes=[])
        return None
