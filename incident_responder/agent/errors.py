"""Errors an agent run raises for the state machine: the class name is the ASL error name.

Transient ones (McpConnectionError, McpInitError, ModelTransientError) are retried by the state's
``Retry``; McpAuthError, ModelAuthError and ModelConfigError (raised by :mod:`incident_responder.agent.models`
too) are not: retrying cannot fix credentials or a model id. Anything not classified propagates unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from botocore.exceptions import ClientError

from incident_responder.core.errors import StateMachineError


class McpConnectionError(StateMachineError):
    """The MCP server could not be reached or stopped answering: refused, DNS, connect or read timeout,
    no answer to a call in time, or the connection lost in the middle of the session."""


class McpInitError(StateMachineError):
    """The MCP server answered but not as one should: protocol, initialize or tool listing failed, HTTP 5xx."""


class McpAuthError(StateMachineError):
    """The MCP server refused our credentials (HTTP 401/403), or we had none to present (no AWS
    credentials to sign with, the API key unavailable): retrying will not help."""


class ModelAuthError(StateMachineError):
    """The model endpoint refused our credentials (AccessDenied, Unauthorized), or this account has no access to the
    model yet (AWS Marketplace subscription, Anthropic's use-case form) or an organisation's SCP denies it: retrying
    will not help."""


class ModelTransientError(StateMachineError):
    """The model endpoint is throttling, over a per-minute quota, unavailable or timed out: retry with backoff."""


class ModelConfigError(StateMachineError, ValueError):
    """RESPONDER_MODEL names no model this project can build (said with what is accepted)."""


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
# A ValidationException is a configuration error only when it is about the model id or its limits; any other one
# (a request the code built wrongly) propagates unchanged.
MODEL_ID_HINTS = ("model identifier", "model id", "inference profile", "on-demand throughput", "end of its life")
LIMIT_HINTS = ("input is too long", "prompt is too long", "context window", "maximum tokens")
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

DOCTOR = "responder doctor --model SPEC checks a model"
# Model access a first use in an account lacks, or an organisation's policy refuses, whatever the error's code (the
# use-case form's is ResourceNotFoundException): no model id or redeploy fixes them, someone with access does.
ACCESS_FAILURES = {
    "aws marketplace": "no AWS Marketplace subscription to the model yet",
    "use case details": "Anthropic's use-case form not submitted",
    "service control policy": "denied by an organization's service control policy",
}
MARKETPLACE_FIX = (
    "this account has not subscribed to the model in AWS Marketplace yet, and the caller may not start the "
    "subscription: invoke the model once as a principal allowed aws-marketplace:Subscribe and "
    "aws-marketplace:ViewSubscriptions (e.g. responder doctor with an administrator's credentials; the account needs a "
    "valid payment method), then allow up to 15 minutes; the agents' roles need no Marketplace permission"
)
USE_CASE_FIX = (
    "Anthropic's one-time use-case form has not been submitted for this account: submit it in the Bedrock console "
    "(Model catalog, open an Anthropic model; once per account, or once in the organization's management account) "
    "or with aws bedrock put-use-case-for-model-access, then retry after 15 minutes"
)
SCP_FIX = (
    "an organization's service control policy denies this call (a Region-deny SCP refuses the Region a cross-Region "
    "profile routed it to): set ResponderModel to a geographic inference profile (us./eu./apac.) whose destination "
    "Regions the SCP allows, or have the SCP allow Bedrock inference in all of them (" + DOCTOR + " lists them)"
)
# What a person does about each failure Bedrock describes, matched on its message (the error bodies Bedrock
# documents and answers with): the first match names the fix in the incident's error. Lower case.
FIXES: list[tuple[str, str]] = [
    ("aws marketplace", MARKETPLACE_FIX),
    ("use case details", USE_CASE_FIX),
    ("service control policy", SCP_FIX),
    (
        "end of its life",
        "the model has reached its end of life on Bedrock: set ResponderModel to an active model (" + DOCTOR + ")",
    ),
    (
        "on-demand throughput",
        "this model is invoked on demand only through an inference profile: set ResponderModel to its profile id, "
        "e.g. bedrock_converse:{profile}",
    ),
    (
        "marked by provider as legacy",
        "the model is Legacy and this account lost access to it: set ResponderModel to an active model ("
        + DOCTOR
        + ")",
    ),
    (
        "don't have access to the model",
        "this account has no access to the model in this Region: Model access comes with a first invocation by a "
        "principal allowed to subscribe in AWS Marketplace (and Anthropic's use-case form); " + DOCTOR + " says which",
    ),
    (
        "is not authorized to perform",
        "the function's role may not invoke this model: deploy the stack with this ResponderModel (its role is scoped "
        "to the configured model), and check that no SCP denies the Regions its inference profile routes to",
    ),
    (
        "model identifier is invalid",
        "Bedrock does not know this model id in this Region: check ResponderModel and the Region (" + DOCTOR + ")",
    ),
    ("not found", "Bedrock does not offer this model here: check ResponderModel and the Region (" + DOCTOR + ")"),
    (
        "too many tokens, please wait",
        "the model's tokens-per-minute quota is used up: retried; raise the quota (Service Quotas) if it persists",
    ),
    (
        "too many requests",
        "Bedrock is throttling this account: retried; raise the model's requests-per-minute quota if it persists",
    ),
    (
        "is too long",
        "the conversation outgrew the model's context window: lower AgentTokenCap, or use a model with a larger one",
    ),
    (
        "maximum tokens",
        "the requested max_tokens exceeds what this model allows: use a model that allows it",
    ),
    ("security token", "the credentials are invalid or expired: renew them"),
    ("signature", "the credentials are invalid or expired: renew them"),
]
KIND_FIX = {
    "auth": "the model endpoint refused the credentials: check the role's (or the API key's) access to the model",
    "transient": "the model endpoint is busy or unavailable: retried with backoff",
    "config": "check ResponderModel (" + DOCTOR + ")",
}
_PROFILE_OF = re.compile(r"model id ([a-z0-9-]+\.[a-z0-9.:-]+)", re.I)


def fix_for(kind: str, message: str) -> str:
    """The one thing a person should do about a model failure of ``kind`` whose message is ``message``."""
    lowered = message.lower()
    for hint, fix in FIXES:
        if hint in lowered:
            if "{profile}" in fix:
                found = _PROFILE_OF.search(message)
                fix = fix.format(profile=f"global.{found.group(1)}" if found else "global.<model id>")
            return fix
    return KIND_FIX[kind]


def access_failure(message: str) -> str | None:
    """The name of the model-access failure ``message`` describes (a first use, an SCP), or None."""
    lowered = message.lower()
    return next((name for hint, name in ACCESS_FAILURES.items() if hint in lowered), None)


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _kind(code: str, message: str) -> str | None:
    lowered = message.lower()
    if access_failure(message) is not None:
        return "auth"
    if code in AUTH_CODES or code in AUTH_CLASS_NAMES:
        # Access lost to a Legacy model is fixed by choosing another model, not by credentials.
        return "config" if "legacy" in lowered else "auth"
    if code in TRANSIENT_CODES or code in TRANSIENT_CLASS_NAMES:
        return "transient"
    if code in CONFIG_CODES or code in CONFIG_CLASS_NAMES:
        return "config"
    if code == "ValidationException" and any(h in lowered for h in MODEL_ID_HINTS + LIMIT_HINTS):
        return "config"
    return None


TYPED = {"auth": ModelAuthError, "transient": ModelTransientError, "config": ModelConfigError}


def explain(code: str, message: str) -> tuple[str, str] | None:
    """(kind: auth, transient or config; the fix) of a model failure, or None when it is not a known one."""
    kind = _kind(code, message)
    return None if kind is None else (kind, fix_for(kind, message))


def _typed(code: str, message: str) -> Exception | None:
    explained = explain(code, message)
    if explained is None:
        return None
    kind, fix = explained
    said = " ".join(message.split())[:300]  # one line, whatever the endpoint sent
    return TYPED[kind](f"{fix} ({code}: {said})")


def classify_model_error(exc: BaseException) -> BaseException:
    """The typed error for a model failure, or ``exc`` itself when it is not a known model failure. Its message is
    one line: the fix first, then what the endpoint said."""
    for link in _chain(exc):
        if isinstance(link, ModelAuthError | ModelTransientError | ModelConfigError):
            return link
        if isinstance(link, ClientError):
            error = link.response.get("Error", {})
            if typed := _typed(error.get("Code", ""), error.get("Message") or str(link)):
                return typed
        elif typed := _typed(type(link).__name__, str(link)):
            return typed
    return exc
