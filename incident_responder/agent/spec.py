"""What one agent run is made of: the agent (its spec), its limits, the state the loop carries, the run's
context (the models with the tools bound, the executor, the clock) and its outcome.

:mod:`incident_responder.agent.graph` runs the loop over these; each agent (the investigator, the proposer, the
critic) is an :class:`AgentSpec`.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, SystemMessage, messages_to_dict
from langchain_core.runnables import Runnable
from langgraph.graph.message import add_messages
from pydantic import BaseModel

from incident_responder.agent.executor import ToolExecutor
from incident_responder.agent.tools import ToolSpec, model_facing_schema
from incident_responder.core.contracts import TokenUsage


@dataclass(frozen=True)
class Limits:
    recursion_limit: int = 12  # model turns
    token_cap: int = 100_000  # input + output tokens per incident
    max_nudges: int = 1
    deadline_buffer_ms: int = 90_000

    def model_call_s(self, remaining_ms: int) -> float:
        """How long one model call may take: until half the deadline buffer is left, the other half kept to store
        the run and return (so the agent's deadline ends a stalled call, never the function's timeout); at least
        a second."""
        return max(1.0, (remaining_ms - self.deadline_buffer_ms // 2) / 1000)


@dataclass(frozen=True)
class AgentSpec:
    """What makes one agent: its prompt, its terminal tool and what happens to an accepted submission."""

    name: str
    system_prompt: str
    terminal_tool: str
    terminal_description: str
    payload_model: type[BaseModel]  # what the model submits: the terminal tool's schema
    # (payload, successful tool results) -> (result to keep, report to record)
    post_submit: Callable[[Any, list[dict[str, Any]]], tuple[Any, dict[str, Any] | None]] | None = None
    tool_filter: Callable[[ToolSpec], bool] = lambda spec: True
    recursion_limit: int | None = None  # this agent's own cap on model turns (the smaller limit wins)
    result_model: type[BaseModel] | None = None  # what post_submit turns the payload into (default: the same)
    # Tools called for the incident's function before the model's first turn (those the servers offer): their answers
    # open the conversation as if the model had called them, so its first choice of tools already knows them.
    pre_read: tuple[str, ...] = ()
    pre_read_args: dict[str, dict[str, Any]] = field(default_factory=dict)  # a tool's arguments besides lambda_name
    # The submission the pre-read answers already determine, or None: then no model turn is taken (a lookup that
    # computes the restore leaves a model nothing to choose). It is checked and post-processed as the model's is.
    decide: Callable[[list[dict[str, Any]]], dict[str, Any] | None] | None = None


class AgentState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    tool_results: list[dict[str, Any]]
    llm_calls: int
    tool_calls: int
    provider_calls: int
    tool_output_bytes: int
    usage: dict[str, int]
    model_ms: int
    tool_ms: int
    nudges: int
    final_warning: str | None
    payload: dict[str, Any] | None
    report: dict[str, Any] | None
    end_reason: str | None
    transcript: Annotated[list[dict[str, Any]], operator.add]  # one entry per event (agent.transcript)


@dataclass
class AgentRun:
    """The outcome of one run: the accepted payload (or None and why), and everything needed to audit it."""

    payload: Any | None
    end_reason: str
    messages: list[AnyMessage]
    tool_results: list[dict[str, Any]]
    report: dict[str, Any] | None
    llm_calls: int
    tool_calls: int
    provider_calls: int
    tool_output_bytes: int
    usage: TokenUsage
    latency_ms: int
    tools_called: list[str] = field(default_factory=list)
    model_ms: int = 0  # time spent waiting for the model
    tool_ms: int = 0  # time spent in tool calls (MCP and the AWS calls behind them)
    transcript: list[dict[str, Any]] = field(default_factory=list)  # what was said and done (agent.transcript)

    def reasoning_chain(self) -> list[dict[str, Any]]:
        return messages_to_dict(self.messages)


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema with ``$ref``s to ``$defs`` inlined: not every model API resolves references."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node and node["$ref"].startswith("#/$defs/"):
                return walk(defs[node["$ref"].split("/")[-1]])
            return {k: walk(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


def model_tool_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A pydantic model's JSON schema as a tool's parameters: references inlined, and OpenAPI's
    ``discriminator`` dropped (its mapping points at the inlined ``$defs``); each variant of a union
    still names its own ``action_type`` as a ``const``. Made once per model and process (pydantic's schema
    generation is a warm invocation's largest cost when no model turn follows); each caller gets its own copy."""
    return json.loads(_model_tool_schema(model))


@functools.cache
def _model_tool_schema(model: type[BaseModel]) -> str:

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items() if k != "discriminator"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return json.dumps(model_facing_schema(walk(inline_refs(model.model_json_schema()))))


@dataclass(frozen=True)
class RunContext:
    """What one run needs besides its state, handed to every node as LangGraph's runtime context
    (``context_schema``): the agent, its model with the tools bound, the tool executor and the limits."""

    spec: AgentSpec
    model: Runnable  # every discovered tool and the terminal tool bound
    submit_only_model: Runnable  # only the terminal tool: what the model gets after the final warning
    executor: ToolExecutor
    limits: Limits
    remaining_ms: Callable[[], int]

    @classmethod
    def create(
        cls,
        spec: AgentSpec,
        model: BaseChatModel,
        executor: ToolExecutor,
        tools: list[ToolSpec],
        limits: Limits,
        remaining_ms: Callable[[], int],
    ) -> RunContext:
        terminal: dict[str, Any] = {
            "type": "function",
            "function": {
                "name": spec.terminal_tool,
                "description": spec.terminal_description,
                "parameters": model_tool_schema(spec.payload_model),
            },
        }
        # Cache points (see cache_point()): after the tool definitions, and, through langchain-aws's cache_control,
        # at the end of the conversation so far: the next turn reads all of it back from the cache.
        cached: list[dict[str, Any]] = [CACHE_POINT] if cache_point(model) else []
        conversation: dict[str, Any] = {"cache_control": {"type": "default"}} if cached else {}
        return cls(
            spec=spec,
            model=model.bind_tools([t.as_model_tool() for t in tools] + [terminal] + cached, **conversation),
            submit_only_model=model.bind_tools([terminal] + cached, **conversation),
            executor=executor,
            limits=limits,
            remaining_ms=remaining_ms,
        )


CACHE_POINT = {"cachePoint": {"type": "default"}}


def cache_point(model: BaseChatModel) -> bool:
    """Whether to mark the prompt's unchanging prefix (tool definitions, system prompt) for Bedrock's prompt
    caching: a Bedrock model whose card says it takes cache points. Each turn of a run re-sends that prefix; read
    from the cache it costs a tenth of the input price (written once at 1.25x), and a prefix shorter than the
    model's minimum is simply not cached."""
    from incident_responder.agent.model_catalog import caches_prompts

    return type(model).__name__ == "ChatBedrockConverse" and caches_prompts(getattr(model, "model_id", ""))


def system_message(prompt: str, model: BaseChatModel) -> SystemMessage:
    """The system prompt, with a cache point after it where :func:`cache_point` says so."""
    return SystemMessage([{"type": "text", "text": prompt}, CACHE_POINT] if cache_point(model) else prompt)
