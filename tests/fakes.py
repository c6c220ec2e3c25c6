"""Test doubles: a scripted chat model and an in-memory diagnostics tool set."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

from incident_responder.agent.tools import InMemoryToolProvider, ToolSpec

NAME_SCHEMA = {
    "type": "object",
    "properties": {"lambda_name": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}},
    "required": ["lambda_name"],
}
LOGS_OUTPUT = {
    "type": "object",
    "properties": {
        "log_group": {"type": "string"},
        "events": {"type": "array", "items": {"type": "object", "properties": {"message": {"type": "string"}}}},
        "error": {"type": ["string", "null"]},
    },
    "required": ["log_group", "events"],
}
LOGS = {
    "log_group": "/aws/lambda/f",
    "events": [
        {"timestamp": "t", "message": "[ERROR] ClientError: An error occurred (AccessDenied) when calling GetObject"}
    ],
    "error": None,
}


def logs_provider(result: Callable[..., Any] | None = None) -> InMemoryToolProvider:
    spec = ToolSpec("get_recent_logs", "recent logs", NAME_SCHEMA, LOGS_OUTPUT)
    return InMemoryToolProvider({"get_recent_logs": (spec, result or (lambda lambda_name: LOGS))})


def call(name: str, args: dict[str, Any], n: int = 0) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"c{n}", "type": "tool_call"}])


def diagnosis(**overrides: Any) -> dict[str, Any]:
    data = {
        "root_cause": "The role lost s3:GetObject, so every read is denied.",
        "fault_types": ["permission_loss"],
        "affected_resources": ["f"],
        "severity": "high",
        "confidence": "high",
        "evidence": [
            {
                "tool": "get_recent_logs",
                "field": "events[0].message",
                "value": "AccessDenied",
                "interpretation": "reads are denied",
            }
        ],
        "remediation_plan": [{"action": "restore the role policy", "evidence_basis": [0]}],
        "investigation_gaps": [],
    }
    data.update(overrides)
    return data


class ScriptedChatModel(BaseChatModel):
    """Returns the scripted responses in order (the last one repeats); records what it was shown."""

    responses: list[Any]
    usage_per_call: int = 100
    _seen: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def seen(self) -> list[dict[str, Any]]:
        return self._seen

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any):
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, tools=None, **kwargs) -> ChatResult:
        self._seen.append({"messages": list(messages), "tools": [t["function"]["name"] for t in tools or []]})
        index = min(len(self._seen) - 1, len(self.responses) - 1)
        response = self.responses[index]
        if isinstance(response, Exception):
            raise response
        message = response.model_copy(deep=True)
        if message.tool_calls:
            message.tool_calls = [{**c, "id": f"{c['id']}-{len(self._seen)}"} for c in message.tool_calls]
        message.usage_metadata = {
            "input_tokens": self.usage_per_call,
            "output_tokens": 10,
            "total_tokens": self.usage_per_call + 10,
        }
        return ChatResult(generations=[ChatGeneration(message=message)])


# -- the agents run as their handlers run them: from the function's settings --------------------
def set_agent_environment(monkeypatch, sample, key: str, **urls: str) -> None:
    """The agent functions' environment against self-hosted servers (bearer ``key``) and ``sample``'s tables.

    ``urls``: ``diagnostics=...`` and/or ``remediation=...``.
    """
    values = {
        "RESPONDER_MODEL": "offline",
        "MCP_AUTH": "api_key",
        "MCP_API_KEY_PARAMETER": sample.api_key_parameter,
        "MCP_API_KEY": key,
        "BASELINE_TABLE": sample.baseline_table,
        "INCIDENT_CONTEXT_TABLE": sample.context_table,
        "ARTIFACTS_BUCKET": sample.artifacts_bucket,
        "INCIDENT_TTL_DAYS": "7",
        "AGENT_RECURSION_LIMIT": "12",
        "AGENT_TOKEN_CAP": "100000",
    }
    for name, url in urls.items():
        values[f"{name.upper()}_MCP_URL"] = url
    for name, value in values.items():
        monkeypatch.setenv(name, value)


def investigate_as_deployed(incident, clients, *, model=None, timeout_ms: int = 300_000):
    from incident_responder.agent.configured import agent_limits, chat_model, mcp_server
    from incident_responder.core.settings import InvestigateSettings
    from incident_responder.investigation.investigate import run_investigation
    from incident_responder.state.store import RecordStore

    config = InvestigateSettings.from_env()
    return run_investigation(
        incident,
        model=model or chat_model(config),
        servers=[mcp_server(config, "diagnostics", config.diagnostics_mcp_url)],
        store=RecordStore.from_settings(config),
        limits=agent_limits(config, timeout_ms),
        clients=clients,
    )


def propose_as_deployed(incident, diagnosis, clients, *, model=None, timeout_ms: int = 180_000):
    from incident_responder.agent.configured import agent_limits, chat_model, mcp_server
    from incident_responder.core.settings import ProposeSettings
    from incident_responder.proposal.propose import run_proposal
    from incident_responder.state.store import RecordStore

    config = ProposeSettings.from_env()
    return run_proposal(
        incident,
        diagnosis,
        model=model or chat_model(config),
        servers=[mcp_server(config, "remediation", config.remediation_mcp_url)],
        store=RecordStore.from_settings(config),
        limits=agent_limits(config, timeout_ms),
        baseline_table=config.baseline_table,
        clients=clients,
    )


def guard(
    clients,
    *actions: dict[str, Any],
    diagnosed: Sequence[str] | None = None,
    function: str = "data-processor",
    qualifier: str | None = None,
):
    """Run actions (as the model would submit them) through the guardrails against the lab account.

    ``diagnosed`` defaults to the actions' own fault types (the diagnosis contains what they remedy);
    ``qualifier`` is the incident's (the alias or version its alarm named).
    """
    from incident_responder.account.baseline import load_baseline
    from incident_responder.account.state import read_function_configuration
    from incident_responder.core.contracts import RemediationProposal
    from incident_responder.guardrails.policy import apply_guardrails

    proposal = RemediationProposal.model_validate({"incident_id": "i-1", "actions": list(actions)})
    faults = list(diagnosed) if diagnosed is not None else [a["fault_type"] for a in actions]
    current = read_function_configuration(clients, function)
    recorded = load_baseline(clients, function)
    return apply_guardrails(
        proposal,
        current,
        recorded.configuration,
        diagnosed_faults=faults,
        clients=clients,
        qualifier=qualifier,
        not_restorable=recorded.not_restorable_paths(),
    )


def inject(clients, *faults: tuple[str, dict[str, Any]], function: str = "data-processor") -> None:
    """Apply chaos faults, e.g. ``inject(clients, ("throttle", {"reserved_concurrency": 0}))``."""
    from chaos import FaultInjector

    chaos = FaultInjector.for_function(function, clients=clients)
    for kind, params in faults:
        getattr(chaos, kind)(**params)


def review_as_deployed(
    incident, diagnosis, proposal_result, clients, *, model=None, auto_approve=None, timeout_ms: int = 180_000
):
    """The review function's path from its settings (``AUTO_APPROVE`` from the environment unless given)."""
    from incident_responder.agent.configured import agent_limits, chat_model, mcp_server
    from incident_responder.core.settings import ReviewSettings
    from incident_responder.review.review import run_review
    from incident_responder.state.store import RecordStore

    config = ReviewSettings.from_env()
    return run_review(
        incident,
        diagnosis,
        proposal_result,
        model=model or chat_model(config),
        servers=[mcp_server(config, "remediation", config.remediation_mcp_url)],
        store=RecordStore.from_settings(config),
        limits=agent_limits(config, timeout_ms),
        auto_approve=auto_approve or config.auto_approve,
        auto_approve_iam_and_network=config.auto_approve_iam_and_network,
        clients=clients,
    )


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def mcp_servers(lab_env: dict[str, str], key: str) -> Iterator[dict[str, str]]:
    """Both MCP servers as processes on loopback against the lab (bearer auth with ``key``); yields their URLs."""
    import os

    from incident_responder.mcp_transport.app import start_server_process

    env = {**os.environ, **lab_env, "MCP_API_KEY": key}
    ports = {"diagnostics": free_port(), "remediation": free_port()}
    procs = [start_server_process(name, port, env) for name, port in ports.items()]
    try:
        yield {name: f"http://127.0.0.1:{port}/mcp" for name, port in ports.items()}
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` serving on a loopback port, in a thread, for the block; yields the server's base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def reply(handler: BaseHTTPRequestHandler, status: int, content_type: str, data: bytes) -> None:
    """One whole answer, its length given (a kept-alive connection needs it to find the next one)."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@contextmanager
def model_endpoint(respond: Callable[[str, dict[str, Any]], tuple[int, str, bytes]]) -> Iterator[str]:
    """A model server on loopback: each JSON POST goes to ``respond(path, request)``, which gives the status,
    content type and body to answer with. Yields the server's base URL."""

    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.1 keeps each connection open for the next request, as real model servers do: a client that pools
        # connections (httpx under openai and ollama) reuses them, so a pool kept across event loops fails here too.
        protocol_version = "HTTP/1.1"

        def do_POST(self):  # noqa: N802 - http.server's API
            reply(self, *respond(self.path, json.loads(self.rfile.read(int(self.headers["Content-Length"])))))

        def log_message(self, *args):
            pass

    with serving(Handler) as url:
        yield url
