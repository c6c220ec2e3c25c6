"""The agent loop's nodes and routes: plain functions of the state and the run's context.

    pre_read       the agent's pre-read tools, called for the incident's function before the first model turn
    agent_reason   the watchdog (deadline, token budget, turn budget), then one model turn
    route          what the model's turn calls for: tools, the submission, a nudge or the end
    execute_tools  the tool calls, their results quoted as untrusted data
    submit         the terminal tool's payload validated (and post-processed by the agent)
    nudge          a model that answered in text is asked for a tool call
    give_up        the run ends without a result, the reason recorded

:mod:`incident_responder.agent.graph` wires them into the ``StateGraph``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.graph import END
from langgraph.runtime import Runtime
from pydantic import ValidationError

from incident_responder.agent import telemetry, transcript
from incident_responder.agent.errors import classify_model_error
from incident_responder.agent.protocol import TOOL_ERROR_PREFIX, quote_untrusted
from incident_responder.agent.spec import AgentState, RunContext
from incident_responder.core.contracts import TokenUsage


def _message_size(message: AnyMessage) -> int:
    content = message.content
    return len(content if isinstance(content, str) else json.dumps(content, default=str))


# -- the nodes and routes: plain functions of the state and the run's context ----------------------
async def agent_reason(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    limits = ctx.limits
    usage = TokenUsage(**state.get("usage", {}))
    llm_calls = state.get("llm_calls", 0)
    warning = state.get("final_warning")
    update: dict[str, Any] = {}
    if warning is None:
        if ctx.remaining_ms() < limits.deadline_buffer_ms:
            warning = "deadline"
        elif usage.total_tokens >= limits.token_cap:
            warning = "token_cap"
        elif llm_calls >= limits.recursion_limit - 1:
            warning = "recursion_limit"
        if warning:
            update["final_warning"] = warning
            notice = (
                f"SUBMIT NOW ({warning.replace('_', ' ')} reached). Call {ctx.spec.terminal_tool} in this turn "
                "with what you have found; list what you could not check in investigation_gaps."
            )
            update["messages"] = [HumanMessage(notice)]
            update["transcript"] = [transcript.warning(warning, notice)]
    bound = ctx.submit_only_model if warning else ctx.model
    messages = list(state["messages"]) + update.get("messages", [])
    started = time.monotonic()
    allowed_s = limits.model_call_s(ctx.remaining_ms())
    try:
        async with telemetry.span("model", turn=llm_calls + 1):
            # The request's timeout, whatever the provider (openai's default is 10 minutes, ollama has none).
            with anyio.move_on_after(allowed_s) as call:
                response = await bound.ainvoke(messages)
    except Exception as exc:
        took_ms = int((time.monotonic() - started) * 1000)
        telemetry.model_called(llm_calls + 1, took_ms, 0, 0, ok=False)
        typed = classify_model_error(exc)
        # The failed call stays in the transcript: the step stores the run so far with the error.
        transcript.keep_on(typed, [*update.get("transcript", []), transcript.model_failed(llm_calls + 1, took_ms, exc)])
        if typed is exc:
            raise
        # A run that raises is recorded only by its error (the state machine keeps the message): it says how many
        # model calls this attempt made, the failed one included, or they would vanish from the record.
        typed.args = (f"{typed}; {llm_calls + 1} model call(s) made, the last one failed",)
        raise typed from exc
    took_ms = int((time.monotonic() - started) * 1000)
    if call.cancelled_caught:
        # Cut at the deadline: the run ends with what it has, and the call is counted like any other.
        telemetry.model_called(llm_calls + 1, took_ms, 0, 0, ok=False, timed_out=True)
        update["llm_calls"] = llm_calls + 1
        update["model_ms"] = state.get("model_ms", 0) + took_ms
        update["end_reason"] = f"deadline: the model did not answer within {allowed_s:.1f} s (turn {llm_calls + 1})"
        update["transcript"] = [
            *update.get("transcript", []),
            transcript.model_timed_out(llm_calls + 1, took_ms, allowed_s),
        ]
        return update
    turn = TokenUsage().add(getattr(response, "usage_metadata", None))
    telemetry.model_called(llm_calls + 1, took_ms, turn.input_tokens, turn.output_tokens, ok=True)
    update["transcript"] = [
        *update.get("transcript", []),
        transcript.model_turn(llm_calls + 1, response, took_ms, turn, stop_reason=stop_reason(response)),
    ]
    update["messages"] = update.get("messages", []) + [response]
    update["llm_calls"] = llm_calls + 1
    update["model_ms"] = state.get("model_ms", 0) + took_ms
    update["usage"] = usage.add(getattr(response, "usage_metadata", None)).model_dump()
    return update


# Converse's stopReason for an answer the model (or a guardrail) declined to give: asking again does not change it.
REFUSALS = {"refusal", "content_filtered", "guardrail_intervened"}


def stop_reason(message: AnyMessage) -> str | None:
    """Why the model stopped (Converse's ``stopReason``, OpenAI's ``finish_reason``), when it says."""
    metadata = getattr(message, "response_metadata", None) or {}
    return metadata.get("stopReason") or metadata.get("stop_reason") or metadata.get("finish_reason")


def route(state: AgentState, runtime: Runtime[RunContext]) -> str:
    if state.get("end_reason"):
        return "give_up"  # the model call was cut at the deadline
    last = state["messages"][-1]
    calls = getattr(last, "tool_calls", None) or []
    if any(c["name"] == runtime.context.spec.terminal_tool for c in calls):
        return "submit"
    if state.get("final_warning"):
        return "give_up"  # told to submit and did not
    if not calls and stop_reason(last) in REFUSALS:
        return "give_up"
    if calls or getattr(last, "invalid_tool_calls", None):
        return "execute_tools"
    if state.get("nudges", 0) < runtime.context.limits.max_nudges:
        return "nudge"
    return "give_up"


def over_budget(state: AgentState, runtime: Runtime[RunContext]) -> str:
    return "give_up" if state.get("llm_calls", 0) >= runtime.context.limits.recursion_limit else "agent_reason"


def model_turn(state: AgentState) -> AIMessage:
    """The model's turn that :func:`route` sent here: only an AI message carries tool calls."""
    last = state["messages"][-1]
    if not isinstance(last, AIMessage):
        raise TypeError(f"the last message is a {type(last).__name__}, not the model's turn")
    return last


async def execute_tools(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    last = model_turn(state)
    results = list(state.get("tool_results", []))
    messages, sent = [], 0
    entries: list[dict[str, Any]] = []  # this turn's transcript entries, one per call
    provider_calls = state.get("provider_calls", 0)
    started = time.monotonic()
    executor = runtime.context.executor
    for call in last.tool_calls:
        called = time.monotonic()
        try:
            async with telemetry.span("tool", call["name"], tool=call["name"]):
                outcome = await executor.run(call["name"], call.get("args"))
        except Exception as exc:
            # An MCP failure ends the run: this turn's calls so far, and this one, stay in the transcript.
            took = int((time.monotonic() - called) * 1000)
            said = f"{type(exc).__name__}: {exc}"
            failed = transcript.tool_call(
                call["name"], call.get("args"), ok=False, error=said, data=None, sent=0, ms=took
            )
            transcript.keep_on(exc, [*entries, failed])
            raise
        provider_calls += int(outcome.provider_called)
        data = outcome.data if outcome.ok else None  # an ok outcome always carries its validated data
        if data is not None:
            results.append({"tool": call["name"], "arguments": call.get("args"), "result": data})
            content = quote_untrusted(call["name"], data)
        else:
            content = f"{TOOL_ERROR_PREFIX}{outcome.error}"
        sent += len(content)
        took = int((time.monotonic() - called) * 1000)
        telemetry.tool_executed(call["name"], call.get("args"), took, len(content), ok=outcome.ok, error=outcome.error)
        entries.append(
            transcript.tool_call(
                call["name"],
                call.get("args"),
                ok=data is not None,
                error=None if data is not None else content,
                data=data,
                sent=len(content),
                ms=took,
                unknown=call["name"] not in executor.specs,
            )
        )
        messages.append(
            ToolMessage(
                content=content,
                tool_call_id=call["id"],
                name=call["name"],
                status="success" if data is not None else "error",
            )
        )
    for bad in getattr(last, "invalid_tool_calls", None) or []:
        # Arguments that were not even JSON: answered so the model can correct itself.
        said = f"{TOOL_ERROR_PREFIX}arguments for {bad.get('name')} could not be parsed: {bad.get('error') or 'invalid JSON'}"
        messages.append(
            ToolMessage(
                content=said,
                tool_call_id=bad.get("id") or "invalid",
                name=bad.get("name") or "unknown",
                status="error",
            )
        )
        entries.append(
            transcript.tool_call(
                bad.get("name") or "unknown", bad.get("args"), ok=False, error=said, data=None, sent=len(said), ms=0
            )
        )
    return {
        "messages": messages,
        "transcript": entries,
        "tool_results": results,
        "tool_calls": state.get("tool_calls", 0) + len(last.tool_calls),
        "provider_calls": provider_calls,
        "tool_output_bytes": state.get("tool_output_bytes", 0) + sent,
        "tool_ms": state.get("tool_ms", 0) + int((time.monotonic() - started) * 1000),
    }


PRE_READ_ID = "pre_read"
DECIDED_ID = f"{PRE_READ_ID}_decided"


def pre_read_calls(runtime: Runtime[RunContext]) -> list[dict[str, Any]]:
    """The spec's pre-read tools the servers offer, each called for the incident's function (none without one)."""
    ctx = runtime.context
    function = ctx.executor.function_name
    if function is None:
        return []
    offered = [name for name in ctx.spec.pre_read if name in ctx.executor.specs]
    return [
        {
            "name": name,
            "args": {"lambda_name": function, **ctx.spec.pre_read_args.get(name, {})},
            "id": f"{PRE_READ_ID}_{i}",
            "type": "tool_call",
        }
        for i, name in enumerate(offered)
    ]


def start(state: AgentState, runtime: Runtime[RunContext]) -> str:
    return "pre_read" if pre_read_calls(runtime) else "agent_reason"


async def pre_read(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """The pre-read tools, run as a turn of tool calls the model did not make (no model call, no tokens): the same
    executor, scope check, quoting and transcript entries as the model's own calls; the model reads their answers
    first. (An assistant turn of tool calls after the first user turn is what every tool-calling API expects.)"""
    call = AIMessage(content="", tool_calls=pre_read_calls(runtime))
    done = await execute_tools({**state, "messages": [*state["messages"], call]}, runtime)
    entries = [{**entry, "pre_read": True} for entry in done["transcript"]]  # the model did not choose these
    update = {**done, "messages": [call, *done["messages"]], "transcript": entries}
    decide = runtime.context.spec.decide
    decided = decide(done["tool_results"]) if decide is not None else None
    if decided is not None:
        # The answers determine the submission: it is made as the model's terminal call would be (no model turn,
        # no tokens), and the submit node checks it as it checks the model's.
        terminal = runtime.context.spec.terminal_tool
        made = {"name": terminal, "args": decided, "id": DECIDED_ID, "type": "tool_call"}
        update["messages"].append(AIMessage(content="", tool_calls=[made]))
    return update


def after_pre_read(state: AgentState, runtime: Runtime[RunContext]) -> str:
    """To the submission when the pre-read determined it, else to the model's first turn."""
    last = state["messages"][-1]
    return "submit" if isinstance(last, AIMessage) and last.tool_calls else "agent_reason"


def submit(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    spec = runtime.context.spec
    last = model_turn(state)
    replies, entries = [], []
    payload, problem = None, None
    for call in last.tool_calls:
        if call["name"] != spec.terminal_tool:
            said = f"not executed: {spec.terminal_tool} was called in the same turn"
            replies.append(ToolMessage(said, tool_call_id=call["id"], name=call["name"], status="error"))
            entries.append(
                transcript.tool_call(call["name"], call.get("args"), ok=False, error=said, data=None, sent=0, ms=0)
            )
            continue
        try:
            payload = spec.payload_model.model_validate(call.get("args") or {})
        except ValidationError as exc:
            problem = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors()[:8])
            replies.append(
                ToolMessage(
                    f"{TOOL_ERROR_PREFIX}{spec.terminal_tool} rejected: {problem}. Fix and call it again.",
                    tool_call_id=call["id"],
                    name=call["name"],
                    status="error",
                )
            )
            entries.append(transcript.submission(spec.terminal_tool, problem=problem))
        else:
            replies.append(ToolMessage("accepted", tool_call_id=call["id"], name=call["name"]))
    if payload is None:
        return {"messages": replies, "transcript": entries}
    report = None
    if spec.post_submit is not None:
        payload, report = spec.post_submit(payload, state.get("tool_results", []))
    accepted = transcript.submission(spec.terminal_tool, problem=None, report=report)
    if last.tool_calls[0]["id"] == DECIDED_ID:
        accepted["decided"] = True  # made from the pre-read answers, not by the model
    return {
        "messages": replies,
        "transcript": [*entries, accepted],
        "payload": payload.model_dump(mode="json"),
        "report": report,
        "end_reason": "submitted",
    }


def after_submit(state: AgentState, runtime: Runtime[RunContext]) -> str:
    if state.get("payload") is not None:
        return END
    if state.get("final_warning") and state.get("llm_calls", 0) >= runtime.context.limits.recursion_limit:
        return "give_up"
    return over_budget(state, runtime)


def nudge(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    terminal = runtime.context.spec.terminal_tool
    if stop_reason(state["messages"][-1]) in ("max_tokens", "length"):
        said = (
            "Your answer was cut off at the output token limit (max_tokens) before any tool call. Be brief: call "
            f"one tool now, or call {terminal} with a short submission."
        )
    else:
        said = f"You answered without calling a tool. Continue with a tool call, or call {terminal} to finish."
    return {
        "nudges": state.get("nudges", 0) + 1,
        "messages": [HumanMessage(said)],
        "transcript": [transcript.nudge(said)],
    }


def give_up(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    spec, limits = runtime.context.spec, runtime.context.limits
    last = state["messages"][-1]
    if state.get("end_reason"):
        return {}  # already said (a model call cut at the deadline)
    if state.get("final_warning"):
        reason = f"{state['final_warning']}: no {spec.terminal_tool} after the final warning"
    elif (stopped := stop_reason(last)) in REFUSALS:
        said = last.content if isinstance(last.content, str) else json.dumps(last.content, default=str)
        reason = f"refused: the model declined to answer (stopReason {stopped}): {' '.join(said.split())[:200]}"
    elif state.get("llm_calls", 0) >= limits.recursion_limit:
        reason = f"recursion_limit: {limits.recursion_limit} model turns without {spec.terminal_tool}"
    elif not getattr(last, "tool_calls", None):
        reason = f"no_tool_call: answered in text after {state.get('nudges', 0)} nudge(s)"
    else:
        reason = "stopped"
    return {"end_reason": reason}
