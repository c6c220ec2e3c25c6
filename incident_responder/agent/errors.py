"""Errors an agent run raises for the state machine: the class name is the ASL error name.

Transient ones (McpConnectionError, McpInitError, ModelTransientError) are retried by the state's
``Retry``; McpAuthError, ModelAuthError and ModelConfigError (:mod:`incident_responder.agent.models`)
are not: retrying cannot fix credentials or a model id. Anything not classified propagates unchanged.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from incident_responder.agent.models import ModelConfigError


class McpConnectionError(Exception):
    """The MCP server could not be reached or stopped answering: refused, DNS, connect or read timeout,
    no answer to a call in time, or the connection lost in the middle of the session."""


class McpInitError(Exception):
    """The MCP server answered but not as one should: protocol, initialize or tool listing failed, HTTP 5xx."""


class McpAuthError(Exception):
    """The MCP server refused our credentials (HTTP 401/403), or we had none to present (no AWS
    credentials to sign with, the API key unavailable): retrying will not help."""


class ModelAuthError(Exception):
    """The model endpoint refused our credentials (AccessDenied, Unauthorized): retrying will not help."""


class ModelTransientError(Exception):
    """The model endpoint is throttling, over a per-minute quota, unavailable or timed out: retry with backoff."""


# Bedrock Runtime's documented errors (Converse, InvokeModel) and the AWS-wide authentication ones.
AUTH_CODES = {
    "AccessDeniedException",  # no IAM permission, or no access granted to this model
    "AccessDenied",
    "UnrecognizedClientException",
    "InvalidClientTokenId",
    "ExpiredTokenException",
    "ExpiredToken",
    "RequestExpired",
    "InvalidSignatureException",
    "IncompleteSignature",
    "MissingAuthenticationToken",
    "NotAuthorized",
    "UnauthorizedException",
}
TRANSIENT_CODES = {
    "ThrottlingException",
    "TooManyRequestsException",
    "ServiceQuotaExceededException",  # per-minute token and request quotas: "resubmit your request later"
    "ServiceUnavailableException",
    "ServiceUnavailable",
    "InternalServerException",
    "InternalFailure",
    "ModelTimeoutException",
    "ModelNotReadyException",  # the model is being loaded
    "ModelErrorException",  # the model failed processing this request (HTTP 424)
    "ModelStreamErrorException",
}
CONFIG_CODES = {"ResourceNotFoundException"}  # no such model (or not offered in this region)
# A ValidationException is a configuration error only when it is about the model id; any other one
# (a request the code built wrongly) propagates unchanged.
MODEL_ID_HINTS = ("model identifier", "model id", "inference profile", "on-demand throughput")
# Other clients raise their own classes; matched by name so their SDKs stay optional.
AUTH_CLASS_NAMES = {"AuthenticationError", "PermissionDeniedError", "NoCredentialsError"}
TRANSIENT_CLASS_NAMES = {
    "RateLimitError",
    "APITimeoutError",
    "InternalServerError",
    "APIConnectionError",
    "ReadTimeoutError",
    "ConnectTimeoutError",
    "EndpointConnectionError",
    "ConnectionClosedError",
}
CONFIG_CLASS_NAMES = {"NotFoundError"}  # OpenAI-compatible: no such model


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _typed(code: str, message: str, link: BaseException) -> Exception | None:
    if code in AUTH_CODES or code in AUTH_CLASS_NAMES:
        return ModelAuthError(f"{code}: {link}")
    if code in TRANSIENT_CODES or code in TRANSIENT_CLASS_NAMES:
        return ModelTransientError(f"{code}: {link}")
    if (
        code in CONFIG_CODES
        or code in CONFIG_CLASS_NAMES
        or (code == "ValidationException" and any(hint in message.lower() for hint in MODEL_ID_HINTS))
    ):
        return ModelConfigError(f"{code}: {link}")
    return None


def classify_model_error(exc: BaseException) -> BaseException:
    """The typed error for a model failure, or ``exc`` itself when it is not a known model failure."""
    for link in _chain(exc):
        if isinstance(link, ModelAuthError | ModelTransientError | ModelConfigError):
            return link
        if isinstance(link, ClientError):
            error = link.response.get("Error", {})
            if typed := _typed(error.get("Code", ""), error.get("Message") or "", link):
                return typed
        elif typed := _typed(type(link).__name__, str(link), link):
            return typed
    return exc
