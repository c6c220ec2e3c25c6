"""The chat-model adapter: a LangChain ``BaseChatModel`` whose turn is the offline policies' next step."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from incident_responder.agent.offline.diagnosis import build_diagnosis
from incident_responder.agent.offline.diagnostic_tools import next_diagnostic_tools
from incident_responder.agent.offline.observations import Observations
from incident_responder.agent.offline.proposal import build_proposal, next_remediation_tools
from incident_responder.agent.offline.review import build_review, next_review_tools
from incident_responder.agent.protocol import (
    DIAGNOSIS_TAG,
    PROPOSAL_TAG,
    QUALIFIED_TOOLS,
    SUBMIT_DIAGNOSIS,
    SUBMIT_PROPOSAL,
    SUBMIT_REVIEW,
    TERMINAL_TOOL_PREFIX,
)


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def next_calls(obs: Observations, available: set[str]) -> list[dict[str, Any]]:
    """The tool calls the agent whose terminal tool is bound makes next, in one turn: the lookups that what is
    known so far calls for (together, as a model calls independent tools), or else its submission."""
    terminal = next((name for name in sorted(available) if name.startswith(TERMINAL_TOOL_PREFIX)), None)
    tools = available - {terminal}
    function = obs.function_name
    lookups: list[str] = []
    if terminal == SUBMIT_DIAGNOSIS:
        lookups = next_diagnostic_tools(obs, tools) if function else []
        submission = None if lookups else build_diagnosis(obs)
    elif terminal == SUBMIT_PROPOSAL:
        diagnosis = obs.quoted.get(DIAGNOSIS_TAG) or {}
        lookups = next_remediation_tools(obs, diagnosis, tools) if function else []
        submission = None if lookups else build_proposal(obs, diagnosis)
    elif terminal == SUBMIT_REVIEW:
        actions = (obs.quoted.get(PROPOSAL_TAG) or {}).get("actions", [])
        lookups = next_review_tools(obs, actions, tools) if function else []
        submission = None if lookups else build_review(obs, actions)
    else:
        return []
    if lookups:
        # An alarm on an alias or version: the configuration and drift of what runs behind it.
        qualified = {"qualifier": obs.incident["qualifier"]} if obs.incident.get("qualifier") else {}
        return [
            {"name": tool, "args": {"lambda_name": function, **(qualified if tool in QUALIFIED_TOOLS else {})}}
            for tool in lookups
        ]
    return [{"name": terminal, "args": submission}]


def next_call(obs: Observations, available: set[str]) -> dict[str, Any] | None:
    """The first of :func:`next_calls`."""
    return next(iter(next_calls(obs, available)), None)


class OfflineChatModel(BaseChatModel):
    """Deterministic tool-calling chat model; see :mod:`incident_responder.agent.offline`.

    >>> model = OfflineChatModel().bind_tools([])   # bind the discovered tools, as any chat model
    """

    @property
    def _llm_type(self) -> str:
        return "incident-responder-offline"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any):
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        tools: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        available = {t["function"]["name"] for t in tools or []}
        calls = next_calls(Observations(messages), available)
        if not calls:
            message = AIMessage(content="I have no tool that fits this request.")
        else:
            for call in calls:
                seed = json.dumps(call, sort_keys=True) + str(len(messages))
                call["id"] = f"call_{uuid.uuid5(uuid.NAMESPACE_OID, seed).hex[:16]}"
                call["type"] = "tool_call"
            message = AIMessage(content="", tool_calls=calls)
        prompt_chars = sum(
            len(m.content) if isinstance(m.content, str) else len(json.dumps(m.content)) for m in messages
        )
        prompt_chars += len(json.dumps(tools or []))
        output = _estimate_tokens(json.dumps(message.tool_calls) + str(message.content))
        prompt = _estimate_tokens("x" * prompt_chars)
        message.usage_metadata = {"input_tokens": prompt, "output_tokens": output, "total_tokens": prompt + output}
        return ChatResult(generations=[ChatGeneration(message=message)])
