"""What an agent function builds from its settings: its chat model, its limits and its MCP server's config.

The settings (:class:`incident_responder.core.settings.AgentSettings`) only validate the environment; building
from them lives here, above both, so core imports nothing of the agents. The record store is built where it is
defined (:meth:`incident_responder.state.store.RecordStore.from_settings`). The imports of each builder are lazy:
they are the agent's heavy ones, loaded on first use (or by :func:`load_model_provider` before a snapshot).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from incident_responder.core.settings import AgentSettings, deadline_buffer_ms

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from incident_responder.agent.spec import Limits
    from incident_responder.agent.tools import McpServerConfig


def chat_model(settings: AgentSettings) -> BaseChatModel:
    """The model ``RESPONDER_MODEL`` names, with its endpoint, key and Bedrock Region."""
    from incident_responder.agent.models import create_chat_model, model_api_key

    return create_chat_model(
        settings.responder_model,
        base_url=settings.model_base_url,
        api_key=model_api_key(settings.model_api_key_parameter),
        bedrock_region=settings.bedrock_region,
        bedrock_profile=settings.bedrock_profile,
    )


def load_model_provider(settings: AgentSettings) -> None:
    """Import the configured model's class now (a SnapStart warm-up: it is otherwise loaded on first call)."""
    from incident_responder.agent.models import load_provider

    load_provider(settings.responder_model)


def agent_limits(settings: AgentSettings, timeout_ms: int) -> Limits:
    """The agent's limits; the deadline buffer is derived from the function's own timeout."""
    from incident_responder.agent.spec import Limits

    return Limits(
        recursion_limit=settings.agent_recursion_limit,
        token_cap=settings.agent_token_cap,
        max_nudges=settings.agent_max_nudges,
        deadline_buffer_ms=deadline_buffer_ms(timeout_ms),
    )


def mcp_server(settings: AgentSettings, name: str, url: str) -> McpServerConfig:
    """The agent's MCP server at ``url``, authenticated as the settings say (IAM or a bearer key)."""
    from incident_responder.agent.tools import McpServerConfig

    return McpServerConfig(name=name, url=url, auth=settings.mcp_auth, api_key_parameter=settings.mcp_api_key_parameter)
