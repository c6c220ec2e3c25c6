from __future__ import annotations

import json

import httpx
import pytest
from botocore.exceptions import ClientError

from incident_responder.agent.errors import (
    McpConnectionError,
    McpInitError,
    ModelAuthError,
    ModelTransientError,
    classify_model_error,
)
from incident_responder.agent.tools import classify_mcp_error
from incident_responder.store import ITEM_LIMIT, RecordStore, item_size, truncate_chain


def client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"}}, "Converse")


@pytest.mark.parametrize(
    "exc, expected",
    [
        (client_error("ThrottlingException"), ModelTransientError),
        (client_error("ServiceUnavailableException"), ModelTransientError),
        (client_error("ModelTimeoutException"), ModelTransientError),
        (client_error("AccessDeniedException"), ModelAuthError),
        (client_error("UnrecognizedClientException"), ModelAuthError),
        (type("RateLimitError", (Exception,), {})("429"), ModelTransientError),
        (type("AuthenticationError", (Exception,), {})("401"), ModelAuthError),
    ],
)
def test_model_errors_are_classified(exc, expected):
    assert isinstance(classify_model_error(exc), expected)


def test_wrapped_model_errors_are_classified_through_the_cause():
    try:
        try:
            raise client_error("ThrottlingException")
        except ClientError as inner:
            raise RuntimeError("langchain wrapper") from inner
    except RuntimeError as outer:
        assert isinstance(classify_model_error(outer), ModelTransientError)


@pytest.mark.parametrize("exc", [ValueError("bug"), client_error("ValidationException"), KeyError("x")])
def test_unknown_errors_are_returned_unchanged(exc):
    assert classify_model_error(exc) is exc


def test_mcp_errors_are_classified():
    request = httpx.Request("POST", "http://x/mcp")
    refused = ExceptionGroup("tg", [httpx.ConnectError("refused", request=request)])
    assert isinstance(classify_mcp_error(refused, "d"), McpConnectionError)
    assert isinstance(classify_mcp_error(TimeoutError(), "d"), McpConnectionError)
    unauthorized = httpx.HTTPStatusError("401", request=request, response=httpx.Response(401, request=request))
    error = classify_mcp_error(ExceptionGroup("tg", [unauthorized]), "d")
    assert isinstance(error, McpInitError) and "HTTP 401" in str(error)
    assert isinstance(classify_mcp_error(RuntimeError("protocol"), "d"), McpInitError)


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
