"""Remediation MCP server: read-only lookups of the exact parameters that restore a function's baseline.

Deployed behind a Lambda function URL with IAM auth (``handlers/remediation_mcp.py``); self-hosted with
``responder mcp serve remediation --port 8082`` (bearer key).
The logic lives in :mod:`incident_responder.actions` (each action type's ``lookup``); this file only registers
one tool per action type, from the registry.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

from incident_responder.account.scope import OnboardedScope
from incident_responder.actions.base import Action
from incident_responder.actions.registry import ACTIONS
from incident_responder.core.aws import AwsClients
from incident_responder.investigation.arguments import LambdaName
from incident_responder.mcp_transport.app import create_server

INSTRUCTIONS = (
    "Read-only lookups for remediation: what differs from the function's recorded baseline and the exact "
    "parameters that would restore it (IAM policies, reserved concurrency, network egress, timeout, memory and "
    "ephemeral storage, the version an alias routes to, the state of the function's KMS key and of its event source "
    "mappings, the secrets its environment names, the visibility timeout of the queues its mappings read). "
    "Nothing here changes the account. Every result has an 'error' field that is set instead of failing."
)
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=True)


def build_server(
    clients: AwsClients | None = None, *, baseline_table: str | None = None, **server_kwargs: Any
) -> FastMCP:
    """The server; every tool first checks that the function is onboarded (:mod:`incident_responder.account.scope`)."""
    clients = clients or AwsClients()
    onboarded = OnboardedScope(clients, baseline_table).aresolve

    mcp = create_server("incident-remediation", INSTRUCTIONS, **server_kwargs)

    for action in ACTIONS.values():
        mcp.add_tool(
            _tool(action, clients, onboarded),
            name=action.lookup_tool,
            description=action.lookup_description,
            annotations=READ_ONLY,
            structured_output=True,
        )
    return mcp


def _tool(action: Action, clients: AwsClients, onboarded: Any) -> Any:
    """The tool function of one action type's lookup, typed with its result model (its output schema)."""

    async def lookup(lambda_name: LambdaName) -> Any:
        # boto3 blocks: each call runs in a worker thread so concurrent requests are not serialized.
        return await anyio.to_thread.run_sync(action.lookup, *await onboarded(lambda_name))

    lookup.__annotations__ = {"lambda_name": LambdaName, "return": action.lookup_model}
    lookup.__name__ = action.lookup_tool
    return lookup


def create_app():
    """ASGI app for external hosts (bearer key); its lifespan runs the MCP session manager."""
    return build_server(host="0.0.0.0").streamable_http_app()
