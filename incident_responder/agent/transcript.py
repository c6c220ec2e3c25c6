"""What an agent said and did, turn by turn: the run's transcript, for a person to read after the run.

The loop's nodes append one entry per event to the state's ``transcript`` key, in order; the run ends with an
``end`` entry. Each entry is a small dict with a ``kind``:

    model       one model call: ``outcome`` answered | timed_out | failed, the model's ``text`` (cut), its
                ``tool_calls`` (name, arguments), ``invalid_tool_calls`` (arguments that were not JSON),
                ``stop_reason``, ``input_tokens``, ``output_tokens``, ``ms``; an unanswered call its ``error``
    tool        one tool call: ``tool``, ``arguments``, ``ok``, ``error`` (what the model was shown),
                ``unknown_tool``, ``result`` (its JSON, cut; ``result_chars`` its whole length), ``bytes`` sent
                back to the model, ``ms``, ``redacted`` (kind -> count) when the server redacted secrets, and
                ``pre_read`` when the loop called it before the first model turn (the agent's pre-read)
    nudge       the model answered in text and was asked for a tool call: ``text``
    warning     the watchdog's notice (``reason``: deadline | token_cap | recursion_limit): ``text``
    submission  the terminal tool's payload ``accepted``, or rejected with the validation ``problem``
    end         the run's ``end_reason``

Nothing here is sent to the model. A run that raises keeps its transcript: the failing node attaches its pending
entries to the exception (:func:`keep_on`), and the loop attaches the run so far (``agent_run``) for the step to
store before the error reaches the state machine.
"""

from __future__ import annotations

import contextlib
from typing import Any

from incident_responder.core.encoding import compact_json

# How a store keeps a transcript within its item (state.transcripts, below the agents): re-exported here.
from incident_responder.state.transcripts import bound as bound
from incident_responder.state.transcripts import size as size

TEXT_LIMIT = 4000  # characters of the model's text kept per turn
RESULT_LIMIT = 1500  # characters of a tool result's JSON kept
ARGUMENTS_LIMIT = 4000  # characters of a call's arguments kept (a proposal's submission can be long)
ERROR_LIMIT = 2000
PENDING = "transcript_pending"  # the attribute of an exception holding the entries of the node that raised it
RUN = "agent_run"  # the attribute of an exception holding the run so far (an AgentRun)


def cut(text: str, limit: int) -> str:
    """``text`` whole, or its first ``limit`` characters marked as cut (with how many were left out)."""
    return text if len(text) <= limit else text[:limit] + f"… [cut: {len(text) - limit} more characters]"


def message_text(content: Any) -> str:
    """The words of a model message: its string, or its text blocks (tool-use and cache blocks left out)."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") in ("text", None) and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


def bounded(value: Any, limit: int = ARGUMENTS_LIMIT) -> Any:
    """``value`` as is when its JSON is short, else that JSON cut (a string)."""
    try:
        text = compact_json(value)
    except (TypeError, ValueError):
        text = repr(value)
    return value if len(text) <= limit else cut(text, limit)


def model_turn(turn: int, message: Any, ms: int, usage: Any, *, stop_reason: str | None) -> dict[str, Any]:
    """A model call that answered: what it said and called."""
    text = message_text(getattr(message, "content", ""))
    entry: dict[str, Any] = {"kind": "model", "turn": turn, "outcome": "answered", "text": cut(text, TEXT_LIMIT)}
    entry["tool_calls"] = [
        {"name": c.get("name"), "arguments": bounded(c.get("args"))} for c in getattr(message, "tool_calls", None) or []
    ]
    invalid = getattr(message, "invalid_tool_calls", None) or []
    if invalid:
        entry["invalid_tool_calls"] = [
            {
                "name": c.get("name"),
                "arguments": cut(str(c.get("args") or ""), ARGUMENTS_LIMIT),
                "error": c.get("error"),
            }
            for c in invalid
        ]
    entry |= {
        "stop_reason": stop_reason,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "ms": ms,
    }
    return entry


def model_timed_out(turn: int, ms: int, allowed_s: float) -> dict[str, Any]:
    return {
        "kind": "model",
        "turn": turn,
        "outcome": "timed_out",
        "error": f"timed out: no answer within {allowed_s:.1f} s",
        "ms": ms,
    }


def model_failed(turn: int, ms: int, error: BaseException) -> dict[str, Any]:
    said = cut(" ".join(f"{type(error).__name__}: {error}".split()), ERROR_LIMIT)
    return {"kind": "model", "turn": turn, "outcome": "failed", "error": said, "ms": ms}


def tool_call(
    tool: str,
    arguments: Any,
    *,
    ok: bool,
    error: str | None,
    data: Any,
    sent: int,
    ms: int,
    unknown: bool = False,
) -> dict[str, Any]:
    """One tool call as the model saw its answer: the result (cut) or the error it was shown."""
    entry: dict[str, Any] = {"kind": "tool", "tool": tool, "arguments": bounded(arguments), "ok": ok}
    if error is not None:
        entry["error"] = cut(error, ERROR_LIMIT)
    if unknown:
        entry["unknown_tool"] = True
    if data is not None:
        text = compact_json(data)
        entry["result"] = cut(text, RESULT_LIMIT)
        entry["result_chars"] = len(text)
        redacted = data.get("redacted") if isinstance(data, dict) else None
        if isinstance(redacted, dict) and redacted:
            entry["redacted"] = {str(k): v for k, v in redacted.items()}
    entry |= {"bytes": sent, "ms": ms}
    return entry


def nudge(text: str) -> dict[str, Any]:
    return {"kind": "nudge", "text": text}


def warning(reason: str, text: str) -> dict[str, Any]:
    return {"kind": "warning", "reason": reason, "text": text}


def submission(tool: str, *, problem: str | None, report: dict[str, Any] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"kind": "submission", "tool": tool, "accepted": problem is None}
    if problem is not None:
        entry["problem"] = cut(problem, ERROR_LIMIT)
    scalars = {k: v for k, v in (report or {}).items() if isinstance(v, int | float | str | bool)}
    if scalars:
        entry["report"] = scalars
    return entry


def end(end_reason: str) -> dict[str, Any]:
    return {"kind": "end", "end_reason": end_reason}


def keep_on(exc: BaseException, entries: list[dict[str, Any]]) -> None:
    """Attach ``entries`` (what the node that raised ``exc`` had seen) to it, after any already attached."""
    # An exception that takes no attributes: the entries are lost, never the error.
    with contextlib.suppress(AttributeError, TypeError):
        setattr(exc, PENDING, [*getattr(exc, PENDING, []), *entries])


def pending(exc: BaseException) -> list[dict[str, Any]]:
    return list(getattr(exc, PENDING, []) or [])
