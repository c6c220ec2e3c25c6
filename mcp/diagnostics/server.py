"""Diagnostics MCP server: read-only tools an investigating agent uses on a failing Lambda function.

Deployed behind a Lambda function URL with IAM auth (``handlers/diagnostics_mcp.py``); self-hosted with
``responder mcp serve diagnostics --port 8081`` (bearer key), or ``create_app()`` under any ASGI host.
The logic lives in :mod:`incident_responder.diagnostics`; this file only registers it.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

from incident_responder import diagnostics
from incident_responder.aws import AwsClients
from incident_responder.diagnostics import (
    ConfigDrift,
    IamState,
    LambdaConfig,
    LambdaName,
    Minutes,
    NetworkConfig,
    RecentLogs,
)
from incident_responder.mcp_app import create_server
from incident_responder.scope import OnboardedScope

INSTRUCTIONS = (
    "Read-only diagnostics for AWS Lambda functions: recent logs (with the errors they report, read by "
    "their structure), IAM role and policies, function configuration (with its KMS key, aliases and event "
    "source mappings), VPC egress path, and drift against the function's recorded known-good baseline "
    "(with when each difference appeared). Every result has an 'error' field that is set instead of failing."
)
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=True)


def build_server(
    clients: AwsClients | None = None, *, baseline_table: str | None = None, **server_kwargs: Any
) -> FastMCP:
    """The server; every tool first checks that the function is onboarded (:mod:`incident_responder.scope`)."""
    clients = clients or AwsClients()
    onboarded = OnboardedScope(clients, baseline_table).acheck

    mcp = create_server("incident-diagnostics", INSTRUCTIONS, **server_kwargs)

    # boto3 blocks: each call runs in a worker thread so concurrent requests are not serialized.
    @mcp.tool(annotations=READ_ONLY, structured_output=True)
    async def get_recent_logs(lambda_name: LambdaName, minutes: Minutes = 10) -> RecentLogs:
        """Newest 30 events (oldest first, each cut to 500 chars) of /aws/lambda/<name> in the last N minutes, and
        'errors': the errors they report (Python and Node.js runtimes, AWS SDKs, the Lambda platform), grouped by
        type with origin (application, aws_service, platform), count and the events they are in."""
        return await anyio.to_thread.run_sync(
            diagnostics.get_recent_logs, clients, await onboarded(lambda_name), minutes
        )

    @mcp.tool(annotations=READ_ONLY, structured_output=True)
    async def get_iam_state(lambda_name: LambdaName) -> IamState:
        """The function's execution role, its attached managed policy ARNs and full inline policy documents."""
        return await anyio.to_thread.run_sync(diagnostics.get_iam_state, clients, await onboarded(lambda_name))

    @mcp.tool(annotations=READ_ONLY, structured_output=True)
    async def get_lambda_config(lambda_name: LambdaName) -> LambdaConfig:
        """Runtime, handler, role, memory, timeout, state, reserved concurrency, VPC config, the environment's KMS
        key and its state, aliases (name -> version) and event source mappings (never the environment variables)."""
        return await anyio.to_thread.run_sync(diagnostics.get_lambda_config, clients, await onboarded(lambda_name))

    @mcp.tool(annotations=READ_ONLY, structured_output=True)
    async def get_network_config(lambda_name: LambdaName) -> NetworkConfig:
        """Egress rules of the function's security groups and the NACL entries of its subnets."""
        return await anyio.to_thread.run_sync(diagnostics.get_network_config, clients, await onboarded(lambda_name))

    @mcp.tool(annotations=READ_ONLY, structured_output=True)
    async def get_config_drift(lambda_name: LambdaName) -> ConfigDrift:
        """Differences (path, baseline value, current value, and when it appeared where the account records it:
        changed_at, changed_at_source) between the function and its recorded baseline."""
        return await anyio.to_thread.run_sync(diagnostics.get_config_drift, clients, await onboarded(lambda_name))

    return mcp


def create_app():
    """ASGI app for external hosts (bearer key); its lifespan runs the MCP session manager."""
    return build_server(host="0.0.0.0").streamable_http_app()
