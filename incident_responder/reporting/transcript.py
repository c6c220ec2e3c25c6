"""Each agent's transcript (:mod:`incident_responder.agent.transcript`) as a person reads it: a section of the report
(every turn a collapsed ``<details>``, everything escaped: the model's words and the tools' output are hostile
text) and plain text for ``responder show --transcript``.

The transcripts come from the stored records: the DynamoDB copy, or the whole one in S3 when that copy was cut.
"""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any

from incident_responder.reporting.markup import _e

# The stored record of each agent's run, and the agent's name.
AGENTS = {"investigation": "investigator", "proposal": "proposer", "review": "critic"}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what a terminal would act on (escape sequences)


def transcripts(clients: Any, records: dict[str, dict[str, Any]]) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """(agent -> its transcript, what could not be read) from the records :func:`~.view.read_incident` read: the
    whole transcript from S3 where the DynamoDB copy was cut and the record points at one."""
    from incident_responder.state.store import read_artifact

    found: dict[str, list[dict[str, Any]]] = {}
    unavailable: list[str] = []
    for record, agent in AGENTS.items():
        stored = records.get(record) or {}
        entries = stored.get("transcript") or []
        if stored.get("transcript_truncated") and stored.get("artifact_uri"):
            try:
                entries = read_artifact(clients, stored["artifact_uri"]).get("transcript") or entries
            except Exception as exc:  # noqa: BLE001 - the copy in the table is still worth showing
                unavailable.append(f"the {agent}'s whole transcript ({type(exc).__name__}): shown as cut")
        if entries:
            found[agent] = [e for e in entries if isinstance(e, dict)]
    return found, unavailable


def redactions(found: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, int]]:
    """What the MCP servers redacted from the tool output the agents saw: tool -> kind -> markers, summed over
    every call (each tool entry's ``redacted``, as the server counted it)."""
    totals: dict[str, dict[str, int]] = {}
    for entries in found.values():
        for entry in entries:
            if entry.get("kind") == "tool" and isinstance(entry.get("redacted"), dict):
                tool = totals.setdefault(str(entry.get("tool")), {})
                for kind, count in entry["redacted"].items():
                    tool[str(kind)] = tool.get(str(kind), 0) + (count if isinstance(count, int) else 0)
    return totals


def redactions_html(found: dict[str, list[dict[str, Any]]]) -> str:
    """A line per tool that had secrets redacted from its output, or that none were."""
    totals = redactions(found)
    if not found:
        return ""
    if not totals:
        return "<p class='muted'>Secrets redacted from the tool output: none found.</p>"
    rows = "".join(
        f"<li><b>{_e(tool)}</b>: " + ", ".join(f"{_e(kind)} {count}" for kind, count in sorted(kinds.items())) + "</li>"
        for tool, kinds in sorted(totals.items())
    )
    return f"<p>Secrets redacted from the tool output before the model saw it (markers, by kind):</p><ul>{rows}</ul>"


def _json(value: Any, indent: int | None = None) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True, indent=indent)


def _counts(entries: list[dict[str, Any]]) -> str:
    turns = sum(e.get("kind") == "model" for e in entries)
    tools = sum(e.get("kind") == "tool" for e in entries)
    end = next((e.get("end_reason") for e in reversed(entries) if e.get("kind") == "end"), None)
    return f"{turns} model turn(s), {tools} tool call(s)" + (f"; ended: {end}" if end else "")


EXCERPT = 100  # characters of the model's words on a turn's one line (the page's summary)


def _turn_line(e: dict[str, Any], *, excerpt: bool = False) -> str:
    """One line saying what a model turn was (the summary of its ``<details>``, the head of its text); ``excerpt``:
    with the start of the model's words."""
    head = f"turn {e.get('turn', '?')}"
    if e.get("outcome") != "answered":
        return f"{head}: {str(e.get('outcome') or '?').replace('_', ' ')}: {e.get('error', '')} ({e.get('ms', 0)} ms)"
    calls = [str(c.get("name")) for c in e.get("tool_calls") or []]
    calls += [f"{c.get('name')} (arguments not JSON)" for c in e.get("invalid_tool_calls") or []]
    said = "called " + ", ".join(calls) if calls else "answered in text" if e.get("text") else "said nothing"
    stop = f", stop {e['stop_reason']}" if e.get("stop_reason") else ""
    words = " ".join(str(e.get("text") or "").split())
    quoted = f' "{words[:EXCERPT]}{"…" if len(words) > EXCERPT else ""}"' if excerpt and words else ""
    return (
        f"{head}: {said}; {e.get('input_tokens', 0)} in / {e.get('output_tokens', 0)} out tokens, "
        f"{e.get('ms', 0)} ms{stop}{quoted}"
    )


def _redacted(e: dict[str, Any]) -> str:
    found = e.get("redacted") or {}
    return ", ".join(f"{kind} {count}" for kind, count in sorted(found.items())) if isinstance(found, dict) else ""


def _tool_line(e: dict[str, Any]) -> str:
    state = "ok" if e.get("ok") else "unknown tool" if e.get("unknown_tool") else "error"
    size = f", {e['result_chars']} chars" if e.get("result_chars") is not None else ""
    redacted = f", redacted: {_redacted(e)}" if _redacted(e) else ""
    when = " (read before turn 1)" if e.get("pre_read") else ""
    return (
        f"tool {e.get('tool')}{when}: {state}{size}, {e.get('bytes', 0)} bytes sent back, {e.get('ms', 0)} ms{redacted}"
    )


def _event_line(e: dict[str, Any]) -> str:
    kind = e.get("kind")
    if kind == "nudge":
        return f"nudge: {e.get('text', '')}"
    if kind == "warning":
        return f"watchdog ({e.get('reason')}): {e.get('text', '')}"
    if kind == "submission":
        if e.get("accepted"):
            report = e.get("report") or {}
            by = " (decided by the pre-read answers: no model turn)" if e.get("decided") else ""
            return f"submission {e.get('tool')}{by}: accepted" + (f" ({_json(report)})" if report else "")
        return f"submission {e.get('tool')}: rejected: {e.get('problem', '')}"
    if kind == "end":
        return f"end: {e.get('end_reason', '')}"
    if kind == "omitted":
        return f"... {e.get('entries', 0)} entries left out to fit the table (the whole transcript is in S3)"
    return f"{kind}: {_json(e)}"


# -- HTML ----------------------------------------------------------------------------------------------
def _pre(text: str) -> str:
    return f"<pre>{escape(text)}</pre>"


def _entry_html(e: dict[str, Any]) -> str:
    kind = e.get("kind")
    if kind == "model":
        body = []
        if e.get("text"):
            body.append("<p class='muted'>the model's words</p>" + _pre(str(e["text"])))
        for c in e.get("tool_calls") or []:
            body.append(f"<p>calls <b>{_e(c.get('name'))}</b></p>" + _pre(_json(c.get("arguments"), 2)))
        for c in e.get("invalid_tool_calls") or []:
            body.append(
                f"<p>calls <b>{_e(c.get('name'))}</b> with arguments that are not JSON: {_e(c.get('error') or '')}</p>"
                + _pre(str(c.get("arguments") or ""))
            )
        cls = "turn" if e.get("outcome") == "answered" else "turn bad-turn"
        return (
            f"<details class='{cls}'><summary>{_e(_turn_line(e, excerpt=True))}</summary>"
            + ("".join(body) or "<p class='muted'>(no words, no tool call)</p>")
            + "</details>"
        )
    if kind == "tool":
        body = [f"<p class='muted'>arguments</p>{_pre(_json(e.get('arguments'), 2))}"]
        if e.get("error"):
            body.append(f"<p class='muted'>the error the model was shown</p>{_pre(str(e['error']))}")
        if e.get("result") is not None:
            shown = len(str(e["result"]))
            whole = e.get("result_chars") or shown
            note = "" if whole <= shown else f" (cut: {whole} chars in all)"
            body.append(f"<p class='muted'>the result the model was sent{_e(note)}</p>{_pre(str(e['result']))}")
        cls = "tool" if e.get("ok") else "tool bad-turn"
        return f"<details class='{cls}'><summary>{_e(_tool_line(e))}</summary>{''.join(body)}</details>"
    cls = {"warning": "event warn", "nudge": "event warn"}.get(str(kind), "event")
    if kind == "submission" and not e.get("accepted"):
        cls = "event bad-turn"
    return f"<div class='{cls}'>{_e(_event_line(e))}</div>"


def transcript_html(found: dict[str, list[dict[str, Any]]]) -> str:
    """The report's Transcript section: per agent, every entry, each turn and tool call collapsed."""
    if not found:
        return "<p>No agent transcript is stored (no agent ran, or its record predates transcripts).</p>"
    parts = [
        "<p class='muted'>What each agent's model said and called, and what each tool answered, in order. "
        "The model's words and the tools' output are untrusted text, shown as text.</p>"
    ]
    for agent, entries in found.items():
        parts.append(
            f"<div class='transcript' id='transcript-{escape(agent)}'><h3>{escape(agent)}</h3>"
            f"<p class='muted'>{_e(_counts(entries))}</p>" + "".join(_entry_html(e) for e in entries) + "</div>"
        )
    return "".join(parts)


# -- text ------------------------------------------------------------------------------------------------
def _clean(text: str) -> str:
    """Text safe to print on a terminal: control characters (escape sequences included) shown as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _indented(text: str, prefix: str = "      ") -> list[str]:
    return [prefix + _clean(line) for line in str(text).splitlines() or [""]]


def transcript_text(found: dict[str, list[dict[str, Any]]]) -> str:
    """Every agent's transcript as plain text (``responder show --transcript``)."""
    if not found:
        return "no agent transcript is stored (no agent ran, or its record predates transcripts)"
    lines: list[str] = []
    for agent, entries in found.items():
        lines.append(f"{agent}: {_clean(_counts(entries))}")
        for e in entries:
            kind = e.get("kind")
            if kind == "model":
                lines.append("  " + _clean(_turn_line(e)))
                if e.get("text"):
                    lines.append("    said:")
                    lines += _indented(e["text"])
                for c in e.get("tool_calls") or []:
                    lines.append(f"    calls {_clean(str(c.get('name')))} {_clean(_json(c.get('arguments')))}")
                for c in e.get("invalid_tool_calls") or []:
                    lines.append(
                        f"    calls {_clean(str(c.get('name')))} with arguments that are not JSON "
                        f"({_clean(str(c.get('error') or ''))}): {_clean(str(c.get('arguments') or ''))}"
                    )
            elif kind == "tool":
                lines.append("    " + _clean(_tool_line(e)))
                lines.append(f"      arguments: {_clean(_json(e.get('arguments')))}")
                if e.get("error"):
                    lines.append(f"      error shown to the model: {_clean(str(e['error']))}")
                if e.get("result") is not None:
                    lines.append(f"      result: {_clean(str(e['result']))}")
            else:
                lines.append("  " + _clean(_event_line(e)))
    return "\n".join(lines)
