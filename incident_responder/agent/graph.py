"""The agent loop both agents share: an explicit LangGraph ``StateGraph``.

    START -> pre_read (the agent's pre-read tools, when offered) -> agent_reason
                                                              -> submit (what the answers determine: no model turn)
    agent_reason -> route -> execute_tools -> agent_reason
                          -> submit        -> END (accepted) | agent_reason (rejected, with the errors)
                          -> nudge         -> agent_reason   (text without a tool call, or cut off at max_tokens:
                                                              count-limited)
                          -> give_up       -> END            (no result, the reason recorded: limits, a refusal)

The nodes and routes are plain functions of the state and the run's :class:`RunContext` (the agent's
spec, its bound models, the tool executor, the limits and the clock), which LangGraph hands them as its
runtime context; the graph itself is compiled once per process.

Before each model call a watchdog checks the remaining time (deadline minus a buffer), the token
budget (counted from the parts of usage) and the turn budget (the recursion limit); the first one
exhausted makes the model hear "submit now", with only the terminal tool bound. Each model call may run until half
the buffer is left: one still unanswered then ends the run (end reason ``deadline``), counted. Tool results reach
the model as quoted, untrusted data. Model errors are raised as the typed errors of
:mod:`incident_responder.agent.errors`; everything else the loop handles by itself.

Every event of the run (each model turn, tool call, nudge, warning, submission and the end) is an entry of its
transcript (:mod:`incident_responder.agent.transcript`); a run that raises attaches itself, transcript included, to
the error (``agent_run``), for the step to store before re-raising.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, StateGraph

from incident_responder.agent import http_pool, transcript
from incident_responder.agent.executor import ToolExecutor
from incident_responder.agent.nodes import (
    after_pre_read,
    after_submit,
    agent_reason,
    execute_tools,
    give_up,
    nudge,
    over_budget,
    pre_read,
    route,
    start,
    submit,
)
from incident_responder.agent.spec import AgentRun, AgentSpec, AgentState, Limits, RunContext, system_message
from incident_responder.agent.tools import McpServerConfig, McpToolProvider, ToolProvider
from incident_responder.core.contracts import TokenUsage


def build_graph():
    """The loop, compiled. It holds nothing of any one run (each run brings its :class:`RunContext`),
    so one compiled graph serves every run: see :func:`agent_graph`."""
    graph = StateGraph(AgentState, context_schema=RunContext)
    graph.add_node("pre_read", pre_read)
    graph.add_node("agent_reason", agent_reason)
    graph.add_node("execute_tools", execute_tools)
    graph.add_node("submit", submit)
    graph.add_node("nudge", nudge)
    graph.add_node("give_up", give_up)
    graph.add_conditional_edges(START, start, ["pre_read", "agent_reason"])
    graph.add_conditional_edges("pre_read", after_pre_read, ["agent_reason", "submit"])
    graph.add_conditional_edges("agent_reason", route, ["execute_tools", "submit", "nudge", "give_up"])
    graph.add_conditional_edges("execute_tools", over_budget, ["agent_reason", "give_up"])
    graph.add_conditional_edges("submit", after_submit, ["agent_reason", "give_up", END])
    graph.add_edge("nudge", "agent_reason")
    graph.add_edge("give_up", END)
    return graph.compile()


@functools.cache
def agent_graph():
    """The compiled loop, built once per process (a warm Lambda reuses it)."""
    return build_graph()


async def run_agent(
    spec: AgentSpec,
    model: BaseChatModel,
    provider: ToolProvider,
    user_message: str,
    *,
    limits: Limits = Limits(),  # noqa: B008 - a frozen dataclass, immutable
    remaining_ms: Callable[[], int] | None = None,
    function_name: str | None = None,
    function_arn: str | None = None,
) -> AgentRun:
    """Run one agent to its end. ``provider`` must already be open (entered). ``function_name``: the incident's
    function, the only one its tools may be called for."""
    started = time.monotonic()
    if spec.recursion_limit is not None and spec.recursion_limit < limits.recursion_limit:
        limits = replace(limits, recursion_limit=spec.recursion_limit)
    if remaining_ms is None:
        deadline = time.monotonic() + 15 * 60

        def remaining_ms() -> int:
            return int((deadline - time.monotonic()) * 1000)

    tools = [t for t in await provider.list_tools() if spec.tool_filter(t) and t.name != spec.terminal_tool]
    executor = ToolExecutor(provider, tools, function_name=function_name, function_arn=function_arn)
    context = RunContext.create(spec, model, executor, tools, limits, remaining_ms)
    initial: AgentState = {"messages": [system_message(spec.system_prompt, model), HumanMessage(user_message)]}
    # LangGraph's own limit is only a backstop: the watchdog ends runs well before it.
    config = {"recursion_limit": limits.recursion_limit * 4 + 10}
    # Streamed, to keep the state after each step: a run that raises keeps its transcript up to the error.
    state: AgentState = initial
    try:
        async for step in agent_graph().astream(initial, config=config, context=context, stream_mode="values"):
            state = step
    except GraphRecursionError:
        state = {**state, "end_reason": "recursion_limit: graph step limit reached"}
    except Exception as exc:
        said = " ".join(f"{type(exc).__name__}: {exc}".split())
        run = _outcome(spec, state, started, end_reason=f"error: {said}"[:500], pending=transcript.pending(exc))
        with contextlib.suppress(AttributeError, TypeError):
            setattr(exc, transcript.RUN, run)  # for the step to store with the error (see agent.transcript)
        raise
    finally:
        await http_pool.release()  # the model's connections, closed while this run's event loop still can
    return _outcome(spec, state, started, end_reason=state.get("end_reason") or "stopped")


def _outcome(
    spec: AgentSpec,
    state: AgentState,
    started: float,
    *,
    end_reason: str,
    pending: list[dict[str, Any]] | None = None,
) -> AgentRun:
    """The run from its state: the accepted payload (validated as the agent's result) and everything counted."""
    payload = state.get("payload")
    results = state.get("tool_results", [])
    return AgentRun(
        payload=(spec.result_model or spec.payload_model).model_validate(payload) if payload is not None else None,
        end_reason=end_reason,
        messages=list(state.get("messages", [])),
        tool_results=results,
        report=state.get("report"),
        llm_calls=state.get("llm_calls", 0) + sum(e.get("kind") == "model" for e in pending or []),
        tool_calls=state.get("tool_calls", 0),
        provider_calls=state.get("provider_calls", 0),
        tool_output_bytes=state.get("tool_output_bytes", 0),
        usage=TokenUsage(**state.get("usage", {})),
        latency_ms=int((time.monotonic() - started) * 1000),
        tools_called=[r["tool"] for r in results],
        model_ms=state.get("model_ms", 0) + sum(e.get("ms", 0) for e in pending or [] if e.get("kind") == "model"),
        tool_ms=state.get("tool_ms", 0),
        transcript=[*state.get("transcript", []), *(pending or []), transcript.end(end_reason)],
    )


async def run_agent_over_mcp(
    spec: AgentSpec,
    user_message: str,
    *,
    model: BaseChatModel,
    servers: list[McpServerConfig] | None = None,
    provider: ToolProvider | None = None,
    limits: Limits = Limits(),  # noqa: B008 - a frozen dataclass, immutable
    remaining_ms: Callable[[], int] | None = None,
    function_name: str | None = None,
    function_arn: str | None = None,
) -> AgentRun:
    """:func:`run_agent` over sessions to ``servers`` (opened and closed here), or over an open ``provider``."""
    if provider is not None:
        return await run_agent(
            spec,
            model,
            provider,
            user_message,
            limits=limits,
            remaining_ms=remaining_ms,
            function_name=function_name,
            function_arn=function_arn,
        )
    if not servers:
        raise ValueError(f"{spec.name}: no MCP server to run over")
    async with McpToolProvider(servers) as opened:
        return await run_agent(
            spec,
            model,
            opened,
            user_message,
            limits=limits,
            remaining_ms=remaining_ms,
            function_name=function_name,
            function_arn=function_arn,
        )
