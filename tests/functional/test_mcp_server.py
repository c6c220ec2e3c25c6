"""The diagnostics MCP server over real streamable HTTP: auth, health, schemas, validation, leaks."""

from __future__ import annotations

import socket
import subprocess
import sys

import anyio
import httpx
import pytest

from incident_responder.actions.registry import REMEDIATION_TOOLS
from incident_responder.lab.workloads.data_processor import DataProcessor
from incident_responder.mcp_transport.app import load_server
from incident_responder.mcp_transport.app import start_server_process as start_mcp_server
from incident_responder.mcp_transport.auth import ApiKeyUnavailableError, ApiKeyVerifier, resolve_api_key
from incident_responder.mcp_transport.client import mcp_session, tool_payload
from tests.conftest import CANARY_SECRET, asgi_client
from tests.mcp_calls import JSON_RPC_HEADERS, KEY, URL, Recording, build, call_raw, tool_call

TOOLS = {
    "get_recent_logs",
    "get_iam_state",
    "get_lambda_config",
    "get_network_config",
    "get_config_drift",
    "get_function_metrics",
    "get_recent_changes",
    "get_dependencies",
}


class NoAws:
    """Clients that fail the test if any AWS call is attempted."""

    def get(self, service):
        raise AssertionError(f"an AWS {service} client was requested for an invalid argument")


def test_health_needs_no_auth(clients):
    async def go():
        async with asgi_client(build(clients)) as client:
            return await client.get("/health")

    response = anyio.run(go)
    assert response.status_code == 200 and response.json()["status"] == "ok"


@pytest.mark.parametrize("token", [None, "", "wrong-key", KEY + "x"])
def test_missing_or_wrong_token_is_401(clients, token):
    response = call_raw(build(clients), token, tool_call("get_lambda_config", {"lambda_name": "data-processor"}))
    assert response.status_code == 401
    assert "data-processor" not in response.text


@pytest.mark.parametrize("token, status", [(None, 401), (KEY, 405)])
def test_a_stream_request_is_refused_at_once_and_only_after_the_key(clients, token, status):
    """Self-hosted too: GET /mcp is 405 at once (it hung), and a caller without the key learns only 401."""
    headers = {"Accept": "text/event-stream", **({"Authorization": f"Bearer {token}"} if token else {})}

    async def go():
        async with asgi_client(build(clients)) as client:
            with anyio.fail_after(5):
                return await client.get("/mcp", headers=headers)

    assert anyio.run(go).status_code == status


def test_tools_are_listed_with_input_and_output_schemas(clients):
    async def go():
        async with asgi_client(build(clients)) as client, mcp_session(URL, KEY, http_client=client) as session:
            return (await session.list_tools()).tools

    tools = {t.name: t for t in anyio.run(go)}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.outputSchema and "error" in tool.outputSchema["properties"]
        assert "pattern" in tool.inputSchema["properties"]["lambda_name"]
        assert tool.annotations.readOnlyHint is True
    assert tools["get_recent_logs"].inputSchema["properties"]["minutes"]["default"] == 10


def test_structured_results_over_mcp(clients, sample):
    DataProcessor(clients).invoke(2)

    async def go():
        async with asgi_client(build(clients)) as client, mcp_session(URL, KEY, http_client=client) as session:
            return {t: tool_payload(await session.call_tool(t, {"lambda_name": "data-processor"})) for t in TOOLS}

    results = anyio.run(go)
    assert results["get_lambda_config"]["ReservedConcurrentExecutions"] == 10
    assert results["get_iam_state"]["role_name"] == "data-processor-role"
    assert len(results["get_recent_logs"]["events"]) > 0
    assert results["get_config_drift"]["drifted"] is False
    assert results["get_network_config"]["in_vpc"] is True
    assert all(r.get("error") is None for r in results.values())


@pytest.mark.parametrize(
    "arguments",
    [
        {"lambda_name": "../../etc/passwd"},
        {"lambda_name": "data processor"},
        {"lambda_name": "x" * 65},
        {"lambda_name": "arn:aws:s3:::some-bucket"},
        {"lambda_name": 42},
        {},
        {"lambda_name": "data-processor", "minutes": 0},
        {"lambda_name": "data-processor", "minutes": 100000},
    ],
)
def test_invalid_arguments_are_rejected_without_any_aws_call(arguments):
    response = call_raw(build(NoAws()), KEY, tool_call("get_recent_logs", arguments))
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "validation error" in text.lower()
    assert "Traceback" not in text


def test_environment_variables_never_leave_the_server(clients, sample):
    for tool in TOOLS:
        response = call_raw(build(clients), KEY, tool_call(tool, {"lambda_name": "data-processor"}))
        assert response.status_code == 200
        assert CANARY_SECRET not in response.text, tool
        assert "DB_PASSWORD" not in response.text, tool
        assert "INPUT_BUCKET" not in response.text, tool


def test_aws_error_is_a_result_not_a_crash(clients, sample):
    clients.get("lambda").delete_function(FunctionName=sample.function_name)  # onboarded, then gone
    response = call_raw(build(clients), KEY, tool_call("get_iam_state", {"lambda_name": sample.function_name}))
    result = response.json()["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["error"].startswith("ResourceNotFoundException")


@pytest.mark.parametrize(
    "lambda_name, message",
    [
        ("someone-elses-function", "is not onboarded"),
        ("arn:aws:lambda:us-east-1:999999999999:function:data-processor", "another account"),
        ("arn:aws:lambda:eu-west-1:123456789012:function:data-processor", "another account, region"),
        ("data-processor\n", "not a Lambda function name"),
        ("data-processor\u0000", "not a Lambda function name"),
    ],
)
def test_out_of_scope_calls_are_refused_before_any_aws_call(clients, sample, lambda_name, message):
    """Only onboarded functions: the one AWS call made is the baseline table's own lookup."""
    recording = Recording(clients)
    response = call_raw(build(recording), KEY, tool_call("get_lambda_config", {"lambda_name": lambda_name}))
    result = response.json()["result"]
    assert result["isError"] is True and message in result["content"][0]["text"]
    assert set(recording.services) <= {"dynamodb"}


def test_the_onboarded_function_is_answered_by_name_and_by_its_arn(clients, sample):
    for name in (sample.function_name, sample.function_arn, f"{sample.function_arn}:live"):
        response = call_raw(build(clients), KEY, tool_call("get_lambda_config", {"lambda_name": name}))
        assert response.json()["result"]["structuredContent"]["FunctionName"] == sample.function_name


def test_key_comes_from_ssm_securestring_with_env_override(clients, sample, monkeypatch):
    assert resolve_api_key() == sample.api_key
    monkeypatch.setenv("MCP_API_KEY", "local-override")
    assert resolve_api_key() == "local-override"


def test_missing_key_fails_closed_with_a_clear_message(clients, monkeypatch):
    monkeypatch.setenv("MCP_API_KEY_PARAMETER", "/nowhere/key")
    with pytest.raises(ApiKeyUnavailableError, match="/nowhere/key"):
        resolve_api_key()
    server = load_server("diagnostics").build_server(clients=clients)
    response = call_raw(server, "anything", tool_call("get_lambda_config", {"lambda_name": "data-processor"}))
    assert response.status_code == 401


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_served_process_end_to_end(clients, sample, lab_env):
    """`responder mcp serve diagnostics` in its own process, key read from SSM, over TCP."""
    port = _free_port()
    server = start_mcp_server("diagnostics", port, lab_env)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        unauthorized = httpx.post(url, json=tool_call("get_lambda_config", {}), headers=JSON_RPC_HEADERS)
        assert unauthorized.status_code == 401

        async def go():
            async with mcp_session(url, sample.api_key) as session:
                return tool_payload(await session.call_tool("get_lambda_config", {"lambda_name": "data-processor"}))

        assert anyio.run(go)["MemorySize"] == 512
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_serve_without_any_key_exits_with_a_clear_message(lab_env):
    env = {**lab_env, "MCP_API_KEY_PARAMETER": "/nowhere/key"}
    env.pop("MCP_API_KEY", None)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "incident_responder.cli",
            "mcp",
            "serve",
            "diagnostics",
            "--port",
            str(_free_port()),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "/nowhere/key" in out.stderr and "MCP_API_KEY" in out.stderr
    assert "Traceback" not in out.stderr


def test_validation_error_says_what_is_expected():
    response = call_raw(build(NoAws()), KEY, tool_call("get_iam_state", {"lambda_name": "rm -rf /"}))
    text = response.json()["result"]["content"][0]["text"]
    assert "not a Lambda function name or ARN" in text and "arn:aws:lambda:REGION:ACCOUNT:function:NAME" in text


def test_create_app_serves_behind_any_host_name(clients, sample, monkeypatch):
    """The factory for external ASGI hosts (container, Lambda Web Adapter): no loopback-only host check."""
    monkeypatch.setenv("MCP_API_KEY", KEY)
    app = load_server("diagnostics").create_app()

    async def go():
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="https://abc123.lambda-url.us-east-1.on.aws"
            ) as c:
                health = await c.get("/health")
                call = await c.post(
                    "/mcp",
                    json=tool_call("get_lambda_config", {"lambda_name": "data-processor"}),
                    headers={**JSON_RPC_HEADERS, "Authorization": f"Bearer {KEY}"},
                )
                return health, call

    health, call = anyio.run(go)
    assert health.status_code == 200
    assert call.json()["result"]["structuredContent"]["MemorySize"] == 512


def test_remediation_server_lists_its_lookups_and_needs_the_key(clients):
    server = load_server("remediation").build_server(clients=clients, verifier=ApiKeyVerifier(lambda: KEY))

    async def go():
        async with asgi_client(server) as client, mcp_session(URL, KEY, http_client=client) as session:
            return (await session.list_tools()).tools

    tools = {t.name: t for t in anyio.run(go)}
    assert set(tools) == REMEDIATION_TOOLS  # one lookup per action type in the registry
    assert all(t.outputSchema and t.annotations.readOnlyHint for t in tools.values())
    response = call_raw(
        build_remediation(clients), None, tool_call("get_iam_restore_info", {"lambda_name": "data-processor"})
    )
    assert response.status_code == 401


def build_remediation(clients):
    return load_server("remediation").build_server(clients=clients, verifier=ApiKeyVerifier(lambda: KEY))
