from __future__ import annotations

import json

import httpx
import pytest
from botocore.exceptions import ClientError, NoCredentialsError
from mcp.shared.exceptions import McpError
from mcp.types import CONNECTION_CLOSED, ErrorData

from incident_responder.agent.errors import (
    McpAuthError,
    McpConnectionError,
    McpInitError,
    ModelAuthError,
    ModelConfigError,
    ModelTransientError,
    classify_model_error,
)
from incident_responder.agent.tools import classify_mcp_error
from incident_responder.mcp_transport.auth import ApiKeyUnavailableError
from incident_responder.mcp_transport.client import SessionLostError
from incident_responder.state.store import ITEM_LIMIT, RecordStore, item_size, truncate_chain


def client_error(code: str, message: str = "m") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, "Converse")


def named(name: str, message: str = "") -> Exception:
    """An exception of a class called ``name`` (OpenAI-compatible, botocore), as classified by name."""
    return type(name, (Exception,), {})(message)


@pytest.mark.parametrize(
    "exc, expected",
    [
        # Bedrock Runtime (Converse / InvokeModel): retried by the state machine
        (client_error("ThrottlingException"), ModelTransientError),
        (client_error("ServiceUnavailableException"), ModelTransientError),
        (client_error("ServiceQuotaExceededException", "Too many tokens, please wait"), ModelTransientError),
        (client_error("ModelNotReadyException"), ModelTransientError),
        (client_error("ModelTimeoutException"), ModelTransientError),
        (client_error("ModelErrorException"), ModelTransientError),
        (client_error("ModelStreamErrorException"), ModelTransientError),
        (client_error("InternalServerException"), ModelTransientError),
        (named("ReadTimeoutError"), ModelTransientError),
        (named("EndpointConnectionError"), ModelTransientError),
        # credentials: never retried
        (client_error("AccessDeniedException"), ModelAuthError),
        (client_error("UnrecognizedClientException"), ModelAuthError),
        (client_error("ExpiredTokenException"), ModelAuthError),
        (client_error("InvalidSignatureException"), ModelAuthError),
        (client_error("InvalidClientTokenId"), ModelAuthError),
        (named("NoCredentialsError", "Unable to locate credentials"), ModelAuthError),
        # the configured model: never retried
        (client_error("ResourceNotFoundException", "Model not found"), ModelConfigError),
        (client_error("ValidationException", "The provided model identifier is invalid."), ModelConfigError),
        (
            client_error(
                "ValidationException",
                "Invocation of model ID x with on-demand throughput isn't supported. "
                "Retry your request with the ID or ARN of an inference profile that contains this model.",
            ),
            ModelConfigError,
        ),
        # OpenAI-compatible endpoints
        (named("RateLimitError", "429"), ModelTransientError),
        (named("APITimeoutError"), ModelTransientError),
        (named("AuthenticationError", "401"), ModelAuthError),
        (named("PermissionDeniedError", "403"), ModelAuthError),
        (named("NotFoundError", "model does not exist"), ModelConfigError),
    ],
)
def test_model_errors_are_classified(exc, expected):
    typed = classify_model_error(exc)
    assert type(typed) is expected
    said = exc.response["Error"]["Message"] if isinstance(exc, ClientError) else str(exc)
    assert said in str(typed) and "\n" not in str(typed)


def test_wrapped_model_errors_are_classified_through_the_cause():
    try:
        try:
            raise client_error("ThrottlingException")
        except ClientError as inner:
            raise RuntimeError("langchain wrapper") from inner
    except RuntimeError as outer:
        assert isinstance(classify_model_error(outer), ModelTransientError)


@pytest.mark.parametrize(
    "exc", [ValueError("bug"), client_error("ValidationException", "messages: too long"), KeyError("x")]
)
def test_unknown_errors_are_returned_unchanged(exc):
    assert classify_model_error(exc) is exc


REQUEST = httpx.Request("POST", "http://x/mcp")


def http_status(status: int) -> httpx.HTTPStatusError:
    return httpx.HTTPStatusError(str(status), request=REQUEST, response=httpx.Response(status, request=REQUEST))


def lost(cause: BaseException) -> SessionLostError:
    """What a request raises when the session ended under it: the transport's failure as the cause."""
    try:
        raise SessionLostError("the session ended") from ExceptionGroup("transport", [cause])
    except SessionLostError as exc:
        return exc


@pytest.mark.parametrize(
    "exc, expected, says",
    [
        (ExceptionGroup("tg", [httpx.ConnectError("refused", request=REQUEST)]), McpConnectionError, "ConnectError"),
        (TimeoutError("no answer within 60 s"), McpConnectionError, "60 s"),
        (lost(httpx.ConnectError("refused", request=REQUEST)), McpConnectionError, "ConnectError"),
        (lost(httpx.ReadTimeout("timed out", request=REQUEST)), McpConnectionError, "ReadTimeout"),
        (SessionLostError("the session ended"), McpConnectionError, "ended"),
        (McpError(ErrorData(code=CONNECTION_CLOSED, message="Connection closed")), McpConnectionError, "closed"),
        (ExceptionGroup("tg", [http_status(401)]), McpAuthError, "HTTP 401"),
        (ExceptionGroup("tg", [http_status(403)]), McpAuthError, "HTTP 403"),
        (lost(http_status(401)), McpAuthError, "HTTP 401"),  # credentials refused mid-session
        (ApiKeyUnavailableError("SSM parameter '/k' is empty"), McpAuthError, "/k"),
        (NoCredentialsError(), McpAuthError, "credentials"),
        (ExceptionGroup("tg", [http_status(500)]), McpInitError, "HTTP 500"),
        (McpError(ErrorData(code=-32602, message="Invalid params")), McpInitError, "Invalid params"),
        (RuntimeError("protocol"), McpInitError, "protocol"),
    ],
)
def test_mcp_errors_are_classified(exc, expected, says):
    typed = classify_mcp_error(exc, "d")
    assert type(typed) is expected
    assert says in str(typed) and "'d'" in str(typed)


def _message(kind: str, content: str) -> dict:
    return {"type": kind, "data": {"content": content, "type": kind}}


def test_small_chain_is_kept_whole():
    chain = [_message("system", "prompt"), _message("human", "incident"), _message("ai", "")]
    assert truncate_chain(chain, 350 * 1024) == (chain, False)


def test_large_chain_keeps_system_prompt_and_last_three_turns_under_the_limit():
    chain = [_message("system", "THE PROMPT"), _message("human", "incident")]
    for turn in range(10):
        chain += [_message("ai", f"turn {turn}"), _message("tool", "x" * 200_000)]
    kept, truncated = truncate_chain(chain, 350 * 1024)
    assert truncated
    assert kept[0]["data"]["content"] == "THE PROMPT"
    assert [m["data"]["content"] for m in kept if m["type"] == "ai"] == ["turn 7", "turn 8", "turn 9"]
    assert len(json.dumps(kept).encode()) <= 350 * 1024
    assert "full chain in S3" in kept[2]["data"]["content"]


def _large_chain() -> list[dict]:
    chain = [_message("system", "THE PROMPT"), _message("human", "incident")]
    for turn in range(10):
        chain += [_message("ai", f"turn {turn}"), _message("tool", "x" * 200_000)]
    return chain


def test_the_whole_item_fits_dynamodb_even_with_a_large_summary():
    """The 400 KB limit counts every attribute: a 300 KB summary leaves the chain less room, not more."""
    summary = {"incident_id": "i-1", "outcome": "DIAGNOSED", "diagnosis": {"evidence": ["e" * 1000] * 300}}
    item = RecordStore("incident-context", ttl_days=7).item("i-1", "investigation", summary, _large_chain(), None)
    assert item_size(item) <= ITEM_LIMIT
    assert item["summary_truncated"] == {"BOOL": True}
    assert json.loads(item["summary"]["S"]) == {"incident_id": "i-1", "outcome": "DIAGNOSED"}
    assert item["truncated"] == {"BOOL": True}
    assert int(item["expires_at"]["N"]) > 0


def test_a_summary_that_fits_is_kept_whole():
    summary = {"incident_id": "i-1", "diagnosis": {"root_cause": "r" * 50_000}}
    item = RecordStore("t").item("i-1", "investigation", summary, _large_chain(), "s3://b/k")
    assert item_size(item) <= ITEM_LIMIT
    assert json.loads(item["summary"]["S"]) == summary and item["summary_truncated"] == {"BOOL": False}
    assert "expires_at" not in item  # no TTL configured, none written


def test_item_size_counts_names_and_values():
    assert item_size({"ab": {"S": "héllo"}, "n": {"N": "12"}, "b": {"BOOL": True}}) == 2 + 6 + 1 + 2 + 1 + 1
