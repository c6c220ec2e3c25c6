"""Remediation MCP server: read-only lookups of the exact parameters that restore a function's baseline.

Deployed behind a Lambda function URL with IAM auth (``handlers/remediation_mcp.py``); self-hosted with
``responder mcp serve remediation --port 8082`` (bearer key).
The logic lives in :mod:`incident_responder.proposal.lookups` (one module per kind of restore); this file
only registers it.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

from incident_responder.account.scope import OnboardedScope
from incident_responder.core.aws import AwsClients
from incident_responder.investigation.arguments import LambdaName
from incident_responder.mcp_transport.app import create_server
from incident_responder.proposal.lookups import (
    alias,
    concurrency,
    event_sources,
    function_config,
    iam,
    kms,
    network,
    queues,
    secrets,
)
from incident_responder.proposal.lookups.alias import AliasRestoreInfo
from incident_responder.proposal.lookups.concurrency import ConcurrencyRestoreInfo
from incident_responder.proposal.lookups.event_sources import EventSourceRestoreInfo
from incident_responder.proposal.lookups.function_config import FunctionConfigRestoreInfo
from incident_responder.proposal.lookups.iam import IamRestoreInfo
from incident_responder.proposal.lookups.kms import KmsRestoreInfo
from incident_responder.proposal.lookups.network import NetworkRestoreInfo
from incident_responder.proposal.lookups.queues import QueueRestoreInfo
from incident_responder.proposal.lookups.secrets import SecretRestoreInfo

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
    onboarded = OnboardedScope(clients, baseline_table).acheck

    mcp = create_server("incident-remediation", INSTRUCTIONS, **server_kwargs)

    @mcp.tool(annotations=READ_ONLY, structured_output=True)
    async def get_iam_restore_info(lambda_name: LambdaName) -> IamRestoreInfo:
        """Inline policies and managed policies the role lost since the baseline, with the documents that restore them."""
        return await anyio.to_thread.run_sync(iam.get_iam_restore_info, clients, await onboarded(lambda_name))

    @mcp.tool(annotations=READ_ONLY, structured_output=True)
    async def get_concurrency_restore_info(lambda_name: LambdaName) -> ConcurrencyRestoreInfo:
        """Current and baseline reserved concurrency, and whether to put the baseline value or delete the reservation."""
        return await anyio.to_thread.run_sync(
            concurrency.get_concurrency_restore_info, clients, await onboarded(lambda_name)
        )

    @mcp.tool(annotations=READ_ONLY, structured_output=True)
    async def get_network_restore_info(lambda_name: LambdaName) -> NetworkRestoreInfo:
        """Security-group egress rules missing since the baseline and NACL entries added since (to remove)."""
        return await anyio.to_thread.run_sync(network.get_network_restore_info, clients, await onboarded(lambda_name))

    @mcp.tool(annotations=READ_ONLY, structured_output=True)
    async def get_function_config_restore_info(lambda_name: LambdaName) -> FunctionConfigRestoreInfo:
        """Timeout, memory size and ephemeral storage (/tmp) against the baseline, and the UpdateFunctionConfiguration
        changes that restore them (ephemeral storage only when it is below the baseline's)."""
        return await anyio.to_thread.run_sync(
            function_config.get_function_config_restore_info, clients, await onboarded(lambda_name)
        )

    @mcp.tool(annotations=READ_ONLY, structured_output=True)
    async def get_alias_restore_info(lambda_name: LambdaName) -> AliasRestoreInfo:
        """Aliases routing to another version than recorded, with both versions' code hashes, and the rollback to the
        baseline version (refused when that version is gone or its code hash is not the recorded one)."""
        return await anyio.to_thread.run_sync(alias.get_alias_restore_info, clients, await onboarded(lambda_name))

    @mcp.tool(annotations=READ_ONLY, structured_output=True)
    async def get_kms_restore_info(lambda_name: LambdaName) -> KmsRestoreInfo:
        """The state of the KMS key encrypting the function's environment against the baseline, and EnableKey when
        the baseline recorded it Enabled and it is Disabled now."""
        return await anyio.to_thread.run_sync(kms.get_kms_restore_info, clients, await onboarded(lambda_name))

    @mcp.tool(annotations=READ_ONLY, structured_output=True)
    async def get_event_source_restore_info(lambda_name: LambdaName) -> EventSourceRestoreInfo:
        """The function's event source mappings (queues, streams) whose state differs from the baseline, and
        UpdateEventSourceMapping Enabled=true for those recorded Enabled and Disabled now."""
        return await anyio.to_thread.run_sync(
            event_sources.get_event_source_restore_info, clients, await onboarded(lambda_name)
        )

    @mcp.tool(annotations=READ_ONLY, structured_output=True)
    async def get_secret_restore_info(lambda_name: LambdaName) -> SecretRestoreInfo:
        """The Secrets Manager secrets the function's environment names whose state differs from the baseline, and
        RestoreSecret (cancel the scheduled deletion) for those recorded available and scheduled for deletion now
        (refused when a secret is gone for good or no longer named)."""
        return await anyio.to_thread.run_sync(secrets.get_secret_restore_info, clients, await onboarded(lambda_name))

    @mcp.tool(annotations=READ_ONLY, structured_output=True)
    async def get_queue_restore_info(lambda_name: LambdaName) -> QueueRestoreInfo:
        """The visibility timeout of each SQS queue the function's event source mappings read against the baseline,
        with the function's timeout, and SetQueueAttributes VisibilityTimeout back to the baseline's value (refused
        when that value is shorter than the function's timeout or the mapping no longer reads the queue)."""
        return await anyio.to_thread.run_sync(queues.get_queue_restore_info, clients, await onboarded(lambda_name))

    return mcp


def create_app():
    """ASGI app for external hosts (bearer key); its lifespan runs the MCP session manager."""
    return build_server(host="0.0.0.0").streamable_http_app()
