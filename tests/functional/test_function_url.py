"""The deployed way into the MCP servers: SigV4-signed requests, a function URL with AWS_IAM, the adapter.

The lab's function URL checks signatures as Lambda does; the adapter in the handler refuses events
that did not pass such a check; the tools answer only for onboarded functions.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import anyio
import httpx
import pytest
from botocore.credentials import Credentials

from incident_responder.agent.errors import McpAuthError
from incident_responder.agent.tools import McpServerConfig, McpToolProvider
from incident_responder.lab.function_url import (
    FunctionUrl,
    SignatureError,
    function_url_event,
    start_function_url,
    verify_sigv4,
)
from incident_responder.mcp_transport.app import load_server
from incident_responder.mcp_transport.client import SigV4Auth, region_of_function_url

# The diagnostics server's tools; get_incident_history only where the server knows the incident-state table, which
# the servers here are not given.
TOOLS = set(load_server("diagnostics").DESCRIPTIONS) - {"get_incident_history"}
EVENTS = Path(__file__).parents[2] / "events"
SECRETS = {"AKIDLAB": "lab-secret"}


def signed(
    body: bytes = b'{"jsonrpc":"2.0"}', *, secret: str = "lab-secret", url: str = "http://127.0.0.1:9/mcp"
) -> httpx.Request:
    """A request as the agents send it: signed by SigV4Auth inside httpx's auth flow."""
    auth = SigV4Auth(Credentials("AKIDLAB", secret, "session-token"), "us-east-1")
    request = httpx.Request("POST", url, content=body, headers={"content-type": "application/json"})
    return next(auth.auth_flow(request))


def verify(request: httpx.Request, **kwargs):
    return verify_sigv4(
        request.method,
        request.url.path,
        request.url.query.decode(),
        dict(request.headers),
        request.content,
        SECRETS,
        **kwargs,
    )


def test_a_signed_request_is_accepted_with_the_callers_identity():
    identity = verify(signed())
    assert identity["accessKey"] == "AKIDLAB" and identity["userArn"].startswith("arn:aws:sts::")


def test_unsigned_tampered_wrongly_keyed_or_stale_requests_are_refused():
    with pytest.raises(SignatureError, match="missing"):
        verify(httpx.Request("POST", "http://127.0.0.1:9/mcp", content=b"{}"))
    tampered = signed()
    with pytest.raises(SignatureError, match="does not match"):
        verify_sigv4("POST", "/mcp", "", dict(tampered.headers), b'{"jsonrpc":"2.0","x":1}', SECRETS)
    with pytest.raises(SignatureError, match="does not match"):
        verify(signed(secret="not-the-secret"))
    with pytest.raises(SignatureError, match="clock skew"):
        verify(signed(), now=time.time() + 3600)
    with pytest.raises(SignatureError, match="us-west-2"):
        verify(signed(), region="us-west-2")
    other_path = signed()
    with pytest.raises(SignatureError, match="does not match"):
        verify_sigv4("POST", "/other", "", dict(other_path.headers), other_path.content, SECRETS)


def test_region_comes_from_the_function_url_host():
    assert region_of_function_url("https://abc123.lambda-url.eu-west-1.on.aws/mcp") == "eu-west-1"
    assert region_of_function_url("http://127.0.0.1:8080/mcp") is None


def test_the_lab_function_url_refuses_before_the_handler_runs():
    called = []
    url = FunctionUrl(lambda event, context: called.append(event) or {"statusCode": 200}, "f", "AWS_IAM", SECRETS)
    status, _, body = url("POST", "/mcp", {"host": "127.0.0.1:9"}, b"{}")
    assert status == 403 and json.loads(body) == {"Message": "Forbidden"} and called == []
    request = signed()
    status, _, _ = url("POST", "/mcp", dict(request.headers), request.content)
    assert status == 200 and called[0]["requestContext"]["authorizer"]["iam"]["accessKey"] == "AKIDLAB"


# -- the handler a function URL invokes, driven by the events in events/ --------------------------
@pytest.fixture
def iam_handler(monkeypatch):
    monkeypatch.setenv("MCP_AUTH", "iam")
    monkeypatch.setenv("BASELINE_TABLE", "incident-baselines")
    from handlers.diagnostics_mcp import handler

    return handler


def event(name: str) -> dict:
    return json.loads((EVENTS / name).read_text())


def test_adapter_serves_the_signed_event_from_events(iam_handler):
    response = iam_handler(event("diagnostics-mcp-list-tools.json"), None)
    assert response["statusCode"] == 200, response
    assert {t["name"] for t in json.loads(response["body"])["result"]["tools"]} == TOOLS
    health = iam_handler(event("diagnostics-mcp-health.json"), None)
    assert health["statusCode"] == 200 and json.loads(health["body"])["status"] == "ok"


def test_adapter_refuses_an_event_without_the_iam_identity(iam_handler):
    """A URL misconfigured with AuthType NONE fails closed: no IAM identity, no MCP."""
    response = iam_handler(event("diagnostics-mcp-unsigned.json"), None)
    assert response["statusCode"] == 403
    forged = function_url_event("POST", "/mcp", "", {"host": "x"}, b"{}", iam={"accessKey": "", "userArn": ""})
    assert iam_handler(forged, None)["statusCode"] == 403


def shaped(method: str, body: str = "") -> dict:
    """The signed list-tools event with another method or body (the IAM identity is Lambda's, not the body's)."""
    changed = event("diagnostics-mcp-list-tools.json")
    changed["requestContext"]["http"]["method"] = method
    changed["body"], changed["isBase64Encoded"] = body, False
    return changed


@pytest.mark.parametrize(
    "body, says",
    [
        ('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":' + "[" * 100_000 + "]" * 100_000 + "}", "nested"),
        ('{"jsonrpc":"2.0","id":' + "9" * 5000 + ',"method":"tools/list"}', "integer"),
        ('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"a":' + "[" * 40 + "]" * 40 + "}}", "nested"),
        ('{"jsonrpc":"2.0","id":1,"method":"tools/list"', "Parse error"),  # the SDK's own answer, unchanged
    ],
)
def test_a_body_no_parser_should_take_is_a_parse_error_not_a_500(iam_handler, body, says, caplog):
    """Defect: a deeply nested or huge-number body got a 500 and a traceback in the server's log."""
    response = iam_handler(shaped("POST", body), None)
    assert response["statusCode"] == 400, response
    error = json.loads(response["body"])["error"]
    assert error["code"] == -32700 and says in error["message"], error
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_a_stream_or_session_request_is_refused_at_once(iam_handler, method):
    """Defect: GET /mcp opened an event stream a stateless server never writes to: the invocation hung until the
    adapter gave up (55 s) and failed. Stateless JSON has no stream to offer and no session to end: 405."""
    started = time.monotonic()
    response = iam_handler(shaped(method), None)
    assert response["statusCode"] == 405 and response["headers"]["allow"] == "POST", response
    assert json.loads(response["body"])["error"]["code"] == -32600
    assert time.monotonic() - started < 5


def test_remediation_event_lists_its_tools(monkeypatch):
    monkeypatch.setenv("MCP_AUTH", "iam")
    monkeypatch.setenv("BASELINE_TABLE", "incident-baselines")
    from handlers.remediation_mcp import handler

    response = handler(event("remediation-mcp-list-tools.json"), None)
    assert response["statusCode"] == 200
    assert "get_iam_restore_info" in {t["name"] for t in json.loads(response["body"])["result"]["tools"]}


# -- end to end: a signed MCP session through the lab's function URL -------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab_url(lab, sample, lab_env):
    port = _free_port()
    env = {**lab_env, "MCP_AUTH": "iam", "BASELINE_TABLE": sample.baseline_table, "POWERTOOLS_TRACE_DISABLED": "true"}
    proc = start_function_url(
        "handlers.diagnostics_mcp.handler", "diagnostics-mcp", port, env, auth_type="AWS_IAM", timeout=60
    )
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(timeout=10)


def test_signed_session_through_the_lab_function_url_answers_for_onboarded_functions_only(lab_url, sample):
    async def go():
        async with McpToolProvider([McpServerConfig(name="diagnostics", url=lab_url, auth="iam")]) as provider:
            names = {t.name for t in await provider.list_tools()}
            ok = await provider.call_tool("get_config_drift", {"lambda_name": sample.function_name})
            other = await provider.call_tool("get_config_drift", {"lambda_name": "someone-elses-function"})
            foreign = await provider.call_tool(
                "get_lambda_config",
                {"lambda_name": f"arn:aws:lambda:us-east-1:999999999999:function:{sample.function_name}"},
            )
            newline = await provider.call_tool("get_lambda_config", {"lambda_name": f"{sample.function_name}\n"})
            return names, ok, other, foreign, newline

    names, ok, other, foreign, newline = anyio.run(go)
    assert names == TOOLS
    assert not ok.is_error and ok.structured["function_name"] == sample.function_name
    assert other.is_error and "not onboarded" in other.text
    assert foreign.is_error and "another account" in foreign.text
    assert newline.is_error and "not a Lambda function name" in newline.text


def test_a_session_without_a_signature_is_refused_by_the_lab_function_url(lab_url, monkeypatch):
    monkeypatch.setenv("SOME_BEARER_KEY", "a-bearer-key-is-not-a-signature")
    config = McpServerConfig(name="diagnostics", url=lab_url, auth="api_key", api_key_env="SOME_BEARER_KEY")
    with pytest.raises(McpAuthError, match="HTTP 403"):
        anyio.run(lambda: McpToolProvider([config]).__aenter__())
