"""The redactor: each secret shape marked, ordinary ids left alone, deterministic, counted; a deployment's own
shapes; the generated token table in step with detect-secrets; and every MCP result and error leaving redacted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.server.fastmcp.exceptions import ToolError
from pydantic import BaseModel

from incident_responder.mcp_transport.app import create_server
from incident_responder.redaction.patterns import card_number, luhn
from incident_responder.redaction.redactor import RedactionConfigError, Redactor, default_redactor, parse_patterns
from tests.conftest import asgi_client
from tests.properties import lab_property
from tests.secret_lines import SECRET_LINES

REPO = Path(__file__).parents[2]
REDACTOR = Redactor()


@pytest.mark.parametrize("kind", sorted(SECRET_LINES))
def test_each_secret_shape_is_replaced_by_its_marker(kind):
    secret, line = SECRET_LINES[kind]
    redacted = REDACTOR.text(line)
    assert secret not in redacted
    assert f"[REDACTED:{kind}]" in redacted
    assert REDACTOR.text(redacted) == redacted  # a second pass changes nothing


@pytest.mark.parametrize(
    "text",
    [
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-password-AbCdEf",
        "arn:aws:sqs:us-east-1:123456789012:orders-processing-dead-letter-queue-abcdefgh",
        "arn:aws:iam::aws:policy/SecretsManagerReadWrite",
        "secretsmanager:GetSecretValue",
        "sts:GetSessionToken",
        "arn:aws:ssm:us-east-1:123456789012:parameter/app/db_password",
        "CodeSha256: ab3+Xv1Zx7sVb9sRqWz6O1qWm1FZ8nM2yQk0cXbA1Zk=",
        "2026/11/27/[$LATEST]0123456789abcdef0123456789abcdef",
        "da39a3ee5e6b4b0d3255bfef95601890afd80709",  # a SHA-1 in hex
        "RequestId: 8f5c3a2e-1b4d-4c6e-9f7a-2d3b4c5e6f70 Duration: 1732712345678 ms",
        "KeyError: 'order_id'",
        "environment.variables.DB_SECRET_ARN",
        "Task timed out after 3.00 seconds",
    ],
)
def test_what_the_evidence_needs_is_left_alone(text):
    assert REDACTOR.text(text) == text


def test_card_numbers_are_taken_by_issuer_and_luhn_never_by_length_alone():
    assert luhn("4111111111111111") and card_number("4111-1111-1111-1111") and card_number("378282246310005")
    assert not card_number("4111111111111112")  # fails Luhn
    assert not card_number("1732712345678")  # an epoch in milliseconds: no issuer starts 17
    assert REDACTOR.text("order 4111111111111112 shipped") == "order 4111111111111112 shipped"


def test_a_json_value_is_redacted_everywhere_and_counted_by_kind():
    value = {
        "events": [{"message": SECRET_LINES["jwt"][1]}, {"message": SECRET_LINES["secret-value"][1]}],
        "tags": {"note": SECRET_LINES["secret-value"][1]},
        "count": 3,
        "upstream": "already [REDACTED:jwt] by the log reader",
    }
    redacted, counts = REDACTOR.value(value)
    assert counts == {"jwt": 2, "secret-value": 2}
    assert redacted["count"] == 3
    assert SECRET_LINES["jwt"][0] not in str(redacted) and "hunter2" not in str(redacted)


@given(st.text(max_size=200), st.sampled_from(sorted(SECRET_LINES)))
@lab_property(200)
def test_redaction_is_deterministic_and_idempotent_around_any_text(noise, kind):
    secret, line = SECRET_LINES[kind]
    text = f"{noise} {line} {noise}"
    once = REDACTOR.text(text)
    assert once == REDACTOR.text(text) and REDACTOR.text(once) == once
    assert secret not in once.replace(noise, "") or secret in noise


def test_a_deployments_own_shapes_come_first_and_bad_ones_are_refused_by_name():
    shapes = parse_patterns('{"order-token": "ord_([a-z0-9]{12})"}')
    redactor = Redactor(shapes + Redactor().shapes)
    assert redactor.text("paid with ord_abcdef123456") == "paid with ord_[REDACTED:order-token]"
    for raw, problem in [
        ('{"x": "("}', "not a regular expression"),
        ('{"x": "a*"}', "matches the empty string"),
        ('{"Bad Kind": "a+"}', "lower-case"),
        ("[1, 2]", "JSON object"),
        ("not json", "not JSON"),
    ]:
        with pytest.raises(RedactionConfigError, match=problem):
            parse_patterns(raw)


def test_the_environment_names_the_deployments_shapes(monkeypatch):
    monkeypatch.setenv("REDACTION_PATTERNS", '{"order-token": "ord_[a-z0-9]{12}"}')
    assert default_redactor().text("ord_abcdef123456") == "[REDACTED:order-token]"
    monkeypatch.delenv("REDACTION_PATTERNS")
    assert default_redactor().text("ord_abcdef123456") == "ord_abcdef123456"


def test_the_token_table_is_what_detect_secrets_gives_today():
    run = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "secret_patterns.py"), "--check"], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr


# -- where results leave an MCP server ------------------------------------------------------------
class Lines(BaseModel):
    lines: list[str]


def _server():
    mcp = create_server("redaction-test", "test", auth="iam")

    @mcp.tool(structured_output=True)
    def read_lines() -> Lines:
        return Lines(lines=[line for _, line in SECRET_LINES.values()])

    @mcp.tool()
    def fail() -> str:
        raise ToolError(f"could not connect: {SECRET_LINES['url-password'][1]}")

    return mcp


def _call(tool: str) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    async def go():
        async with asgi_client(_server()) as client:
            return (await client.post("/mcp", json=body, headers=headers)).json()["result"]

    return anyio.run(go)


def test_a_tool_result_leaves_the_server_redacted_and_says_what_was_redacted():
    result = _call("read_lines")
    for secret, _ in SECRET_LINES.values():
        assert secret not in str(result)
    assert result["structuredContent"]["redacted"] == {kind: 1 for kind in SECRET_LINES}
    assert "[REDACTED:jwt]" in result["content"][0]["text"]  # the text a client without structure reads


def test_a_tool_error_leaves_the_server_redacted():
    result = _call("fail")
    assert result["isError"] is True
    assert "s3cr3t-url-pw" not in result["content"][0]["text"]
    assert "[REDACTED:url-password]" in result["content"][0]["text"]
