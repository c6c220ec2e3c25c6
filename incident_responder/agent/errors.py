"""Errors an agent run raises for the state machine: the class name is the ASL error name.

Transient ones (McpConnectionError, McpInitError, ModelTransientError) are retried by the state's
``Retry``; ModelAuthError goes straight to ERROR. Anything not classified propagates unchanged.
"""

from __future__ import annotations

from botocore.exceptions import ClientError


class McpConnectionError(Exception):
    """The MCP server could not be reached (refused, DNS, connect or initialize timeout)."""


class McpInitError(Exception):
    """The MCP server answered but the session could not be initialized (auth, protocol, tool listing)."""


class ModelAuthError(Exception):
    """The model endpoint refused our credentials (AccessDenied, Unauthorized): retrying will not help."""


class ModelTransientError(Exception):
    """The model endpoint is throttling, unavailable or timed out: retry with backoff."""


AUTH_CODES = {
    "AccessDeniedException",
    "AccessDenied",
    "UnrecognizedClientException",
    "ExpiredTokenException",
    "InvalidSignatureException",
    "UnauthorizedException",
}
TRANSIENT_CODES = {
    "ThrottlingException",
    "TooManyRequestsException",
    "ServiceUnavailableException",
    "ModelTimeoutException",
    "ModelNotReadyException",
    "InternalServerException",
}
# OpenAI-compatible clients raise their own classes; matched by name so the SDK stays optional.
AUTH_CLASS_NAMES = {"AuthenticationError", "PermissionDeniedError"}
TRANSIENT_CLASS_NAMES = {"RateLimitError", "APITimeoutError", "InternalServerError", "APIConnectionError"}


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def classify_model_error(exc: BaseException) -> BaseException:
    """The typed error for a model failure, or ``exc`` itself when it is not a known model failure."""
    for link in _chain(exc):
        if isinstance(link, ModelAuthError | ModelTransientError):
            return link
        if isinstance(link, ClientError):
            code = link.response.get("Error", {}).get("Code", "")
            if code in AUTH_CODES:
                return ModelAuthError(f"{code}: {link}")
            if code in TRANSIENT_CODES:
                return ModelTransientError(f"{code}: {link}")
        name = type(link).__name__
        if name in AUTH_CLASS_NAMES:
            return ModelAuthError(f"{name}: {link}")
        if name in TRANSIENT_CLASS_NAMES:
            return ModelTransientError(f"{name}: {link}")
        if name in {"ReadTimeoutError", "ConnectTimeoutError", "EndpointConnectionError"}:
            return ModelTransientError(f"{name}: {link}")
    return exc
