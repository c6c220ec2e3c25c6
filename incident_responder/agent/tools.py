"""Tools the agents use, discovered from MCP servers and called through a provider.

A provider lists tools (name, description, input and output JSON schemas) and calls them. The agent
never depends on the transport: :class:`McpToolProvider` speaks streamable HTTP (SigV4-signed, or
with a bearer key) to every configured server, :class:`InMemoryToolProvider` serves plain functions for tests.
:class:`ToolExecutor` validates arguments before any call and responses after it, against the
schemas the server itself declared, so adding a tool to a server needs no agent change.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import anyio
import httpx
import yaml
from anyio.abc import TaskGroup
from botocore.exceptions import NoCredentialsError
from mcp.shared.exceptions import McpError
from mcp.types import CONNECTION_CLOSED, CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest
from pydantic import BaseModel, Field

from incident_responder.agent.errors import McpAuthError, McpConnectionError, McpInitError
from incident_responder.mcp_transport.client import INITIALIZE_TIMEOUT_SECONDS, McpConnection, SessionLostError

CLOSE_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    server: str = "in-memory"

    def as_model_tool(self) -> dict[str, Any]:
        """The OpenAI-style function description every LangChain chat model's ``bind_tools`` accepts: the
        description on one line and the input schema as :func:`model_facing_schema` shows it. The executor
        validates every call's arguments against the server's own schema first, so a ``pattern`` that its
        field's description already puts in words is left to it."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": " ".join(self.description.split()),
                "parameters": model_facing_schema(self.input_schema, validated=True),
            },
        }


# Keywords whose value is a map of names to schemas: the names are not keywords.
_SCHEMA_MAPS = {"properties", "$defs", "definitions", "patternProperties"}
_COMPOSITE = {"anyOf", "oneOf", "allOf", "$ref", "enum", "const", "not"}


def model_facing_schema(schema: Any, *, validated: bool = False) -> Any:
    """A JSON schema as a model is shown it, every call: the same constraints, without what only repeats
    them. ``title`` (pydantic's copy of each name) is left out, and ``anyOf: [X, {"type": "null"}]`` is written
    as X with ``"type": [X's type, "null"]``, which JSON Schema defines as the same. ``validated``: values are
    checked against the full schema before use, so a described field's ``pattern`` is left out as well (its
    description says the format in words; a value that does not match is answered with the validator's message)."""
    if isinstance(schema, list):
        return [model_facing_schema(item, validated=validated) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "pattern" and validated and isinstance(schema.get("description"), str):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: model_facing_schema(sub, validated=validated) for name, sub in value.items()}
        else:
            out[key] = model_facing_schema(value, validated=validated)
    variants = out.get("anyOf")
    if isinstance(variants, list) and len(variants) == 2 and {"type": "null"} in variants:
        (other,) = [v for v in variants if v != {"type": "null"}] or [None]
        if isinstance(other, dict) and isinstance(other.get("type"), str) and not _COMPOSITE & other.keys():
            rest = {k: v for k, v in out.items() if k != "anyOf"}
            if not rest.keys() & other.keys():
                return {**other, "type": [other["type"], "null"], **rest}
    return out


@dataclass(frozen=True)
class RawToolResult:
    is_error: bool
    structured: dict[str, Any] | None
    text: str = ""


class ToolProvider(Protocol):
    async def list_tools(self) -> list[ToolSpec]: ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> RawToolResult: ...


# -- in memory ------------------------------------------------------------------------------------
@dataclass
class InMemoryToolProvider:
    """Tools as plain (sync or async) functions returning dicts; records every call it receives."""

    tools: dict[str, tuple[ToolSpec, Callable[..., Any]]]
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    async def list_tools(self) -> list[ToolSpec]:
        return [spec for spec, _ in self.tools.values()]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> RawToolResult:
        self.calls.append((name, arguments))
        _, function = self.tools[name]
        result = function(**arguments)
        if isinstance(result, Awaitable):
            result = await result
        if isinstance(result, RawToolResult):
            return result
        if isinstance(result, BaseModel):
            result = result.model_dump(mode="json")
        return RawToolResult(is_error=False, structured=result)

    async def __aenter__(self) -> InMemoryToolProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


# -- MCP over streamable HTTP ---------------------------------------------------------------------
class McpServerConfig(BaseModel):
    """One MCP server: where it is and how to authenticate to it.

    ``iam``: SigV4-signed requests with the caller's own AWS credentials (a function URL with
    ``AuthType: AWS_IAM``, as deployed). ``api_key``: a bearer key from the environment variable
    ``api_key_env`` or the SSM SecureString ``api_key_parameter`` (self-hosted servers).
    """

    name: str
    url: str
    auth: Literal["iam", "api_key"] = "api_key"
    api_key_env: str | None = Field(default="MCP_API_KEY", description="environment variable holding the key")
    api_key_parameter: str | None = Field(default=None, description="SSM SecureString holding the key")

    def api_key(self) -> str | None:
        if self.auth == "iam":
            return None
        from incident_responder.mcp_transport.auth import ApiKeyUnavailableError, resolve_api_key

        try:
            return resolve_api_key(self.api_key_parameter, env_var=self.api_key_env or "MCP_API_KEY")
        except ApiKeyUnavailableError as exc:
            raise McpAuthError(f"MCP server {self.name!r}: {exc}") from exc

    def http_auth(self) -> httpx.Auth | None:
        if self.auth != "iam":
            return None
        from incident_responder.mcp_transport.client import SigV4Auth

        try:
            return SigV4Auth.from_session(self.url)
        except ValueError as exc:  # no credentials (or no region) to sign with
            raise McpAuthError(f"MCP server {self.name!r}: {exc}") from exc


def load_mcp_servers(only: tuple[str, ...] = ()) -> list[McpServerConfig]:
    """Servers for the command line, from ``RESPONDER_MCP_CONFIG`` (a JSON or YAML file),
    ``RESPONDER_MCP_SERVERS`` (JSON), or ``DIAGNOSTICS_MCP_URL`` / ``REMEDIATION_MCP_URL`` with ``MCP_AUTH``
    (``iam`` or ``api_key``; by default ``api_key`` when ``MCP_API_KEY`` or ``MCP_API_KEY_PARAMETER`` is
    set, else ``iam``). Deployed functions pass their servers explicitly (:mod:`incident_responder.core.settings`).

    File format: ``{"servers": [{"name": "diagnostics", "url": "https://.../mcp", "auth": "iam"}]}``
    """
    if path := os.environ.get("RESPONDER_MCP_CONFIG"):
        data = yaml.safe_load(Path(path).read_text())
    elif raw := os.environ.get("RESPONDER_MCP_SERVERS"):
        data = json.loads(raw)
    elif os.environ.get("DIAGNOSTICS_MCP_URL") or os.environ.get("REMEDIATION_MCP_URL"):
        keyed = os.environ.get("MCP_API_KEY") or os.environ.get("MCP_API_KEY_PARAMETER")
        auth = os.environ.get("MCP_AUTH") or ("api_key" if keyed else "iam")
        data = {
            "servers": [
                {
                    "name": name,
                    "url": os.environ[var],
                    "auth": auth,
                    "api_key_parameter": os.environ.get("MCP_API_KEY_PARAMETER"),
                }
                for name, var in (("diagnostics", "DIAGNOSTICS_MCP_URL"), ("remediation", "REMEDIATION_MCP_URL"))
                if os.environ.get(var)
            ]
        }
    else:
        raise McpInitError(
            "no MCP server configured: set RESPONDER_MCP_CONFIG, RESPONDER_MCP_SERVERS or DIAGNOSTICS_MCP_URL"
        )
    servers = [
        McpServerConfig.model_validate(s) for s in (data.get("servers") if isinstance(data, dict) else data) or []
    ]
    # Named servers when the configuration has them; otherwise all (the agents filter tools by name anyway).
    return [s for s in servers if s.name in only] or servers


def _causes(exc: BaseException, seen: set[int] | None = None):
    """``exc``, the members of exception groups and the causes, depth first."""
    seen = set() if seen is None else seen
    if id(exc) in seen:
        return
    seen.add(id(exc))
    yield exc
    if isinstance(exc, BaseExceptionGroup):
        for sub in exc.exceptions:
            yield from _causes(sub, seen)
    if exc.__cause__ is not None:
        yield from _causes(exc.__cause__, seen)


def classify_mcp_error(exc: BaseException, server: str) -> Exception:
    """The typed error for an MCP failure (opening the session or in the middle of it).

    McpAuthError: the server refused our credentials (HTTP 401/403) or we had none to present.
    McpConnectionError: unreachable, no answer in time, or the connection lost mid-session.
    McpInitError: the server answered, but not as an MCP server should (protocol, HTTP status, tools).
    """
    from incident_responder.mcp_transport.auth import ApiKeyUnavailableError

    for link in _causes(exc):
        if isinstance(link, McpAuthError | McpConnectionError | McpInitError):
            return link
        if isinstance(link, ApiKeyUnavailableError | NoCredentialsError):
            return McpAuthError(f"MCP server {server!r}: no credentials to present: {link}")
        if isinstance(link, httpx.HTTPStatusError):
            status = link.response.status_code
            if status in (401, 403):
                return McpAuthError(f"MCP server {server!r} refused our credentials: HTTP {status}")
            return McpInitError(f"MCP server {server!r} refused the session: HTTP {status}")
        if isinstance(link, httpx.TransportError | TimeoutError | OSError) or (
            isinstance(link, McpError) and link.error.code == CONNECTION_CLOSED
        ):
            return McpConnectionError(f"MCP server {server!r} unreachable: {type(link).__name__}: {link}")
    if isinstance(exc, SessionLostError):
        return McpConnectionError(f"MCP server {server!r}: {exc}")
    return McpInitError(f"MCP server {server!r} failed: {type(exc).__name__}: {exc}")


class McpToolProvider:
    """Sessions to every configured MCP server for the duration of one agent run (an async context).

    Each session is served by a task of the provider's own (:class:`McpConnection`), so a transport
    failure never cancels the agent's tasks: a call made when or while a session fails raises the
    typed error of :func:`classify_mcp_error`, with the underlying cause in its message.
    """

    def __init__(self, servers: list[McpServerConfig], http_clients: dict[str, httpx.AsyncClient] | None = None):
        self.servers = servers
        self._http_clients = http_clients or {}
        self._connections: dict[str, McpConnection] = {}
        self._route: dict[str, str] = {}
        self._specs: list[ToolSpec] = []
        self._tasks: TaskGroup | None = None

    async def __aenter__(self) -> McpToolProvider:
        self._tasks = anyio.create_task_group()
        await self._tasks.__aenter__()
        try:
            for server in self.servers:
                await self._connect(server)
        except BaseException:
            await self._close()
            raise
        return self

    async def _connect(self, server: McpServerConfig) -> None:
        assert self._tasks is not None
        try:
            connection = McpConnection(
                server.url, server.api_key(), auth=server.http_auth(), http_client=self._http_clients.get(server.name)
            )
            self._connections[server.name] = connection
            self._tasks.start_soon(connection.serve, name=f"MCP session to {server.name}")
            listed = await connection.request(lambda session: session.list_tools(), INITIALIZE_TIMEOUT_SECONDS)
        except Exception as exc:
            if (typed := classify_mcp_error(exc, server.name)) is exc:
                raise
            raise typed from exc
        for tool in listed.tools:
            self._route[tool.name] = server.name
            self._specs.append(
                ToolSpec(
                    name=tool.name,
                    description=tool.description or "",
                    input_schema=tool.inputSchema,
                    output_schema=tool.outputSchema,
                    server=server.name,
                )
            )

    async def _close(self) -> None:
        """Close every session, each given CLOSE_TIMEOUT_SECONDS to end cleanly."""
        if self._tasks is None:
            return
        tasks, self._tasks = self._tasks, None
        for connection in self._connections.values():
            connection.close()
        tasks.cancel_scope.deadline = anyio.current_time() + CLOSE_TIMEOUT_SECONDS
        # Nothing passed in: a task group would wrap the run's own exception in an ExceptionGroup.
        await tasks.__aexit__(None, None, None)

    async def __aexit__(self, *exc: object) -> None:
        await self._close()

    async def list_tools(self) -> list[ToolSpec]:
        return list(self._specs)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> RawToolResult:
        server = self._route[name]
        try:
            result = await self._connections[server].request(
                lambda session: call_tool_unchecked(session, name, arguments)
            )
        except Exception as exc:
            if (typed := classify_mcp_error(exc, server)) is exc:
                raise
            raise typed from exc
        text = " ".join(getattr(c, "text", "") for c in result.content).strip()
        return RawToolResult(is_error=bool(result.isError), structured=result.structuredContent, text=text)


async def call_tool_unchecked(session: Any, name: str, arguments: dict[str, Any]) -> CallToolResult:
    """``session.call_tool`` without the SDK's own check of the result against the tool's output schema: the
    :class:`ToolExecutor` checks every result, once, with a validator built once per schema (the SDK's check parses
    the schema against its metaschema again at every call, and lists the tools again when it misses one)."""
    request = CallToolRequest(params=CallToolRequestParams(name=name, arguments=arguments))
    return await session.send_request(ClientRequest(request), CallToolResult)
