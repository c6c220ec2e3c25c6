"""One incident as a self-contained HTML page: what happened, what was found, proposed, decided, done and
verified, when, and at what cost.

    detail = collect(clients, incident_id, state_table=..., context_table=...)  # stores, artifacts, ledger, history
    html = render_html(detail)  # one page, no external assets, no script

:func:`collect` adds to :func:`incident_responder.reporting.view.gather` what a page can show beside it: the
alert, each tool output an evidence pointer quotes (from the investigation's full record in S3), every
agent's usage and transcript (every turn, collapsed), the undo ledger (before and after of each action), the execution's history and the state
machine's definition (for the picture). Everything shown is escaped, and the page forbids scripts and remote
loads (a Content-Security-Policy), so a hostile log line quoted as evidence stays text.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from html import escape
from typing import Any

from incident_responder.reporting.markup import CSS, _e, _pre, _section, _table
from incident_responder.reporting.sections import _decision_and_actions, _diagnosis, _evidence, _proposal, _timeline

# How an execution's history ends, as DescribeExecution would name its status (no such event yet: running).
_ENDS = {
    "ExecutionSucceeded": "SUCCEEDED",
    "ExecutionFailed": "FAILED",
    "ExecutionTimedOut": "TIMED_OUT",
    "ExecutionAborted": "ABORTED",
}
STATUS_COLOURS = {
    "REMEDIATED": "#2e7d32",
    "PROPOSAL_READY": "#1565c0",
    "ROLLED_BACK": "#ef6c00",
    "REJECTED": "#6d4c41",
    "APPROVAL_EXPIRED": "#6d4c41",
    "SUPPRESSED": "#616161",
}


def estimated_cost_usd(
    input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0, *, model_spec: str | None = None
) -> float | None:
    """USD from PRICE_PER_MTOK_INPUT / PRICE_PER_MTOK_OUTPUT (per million tokens; cache prices:
    :func:`incident_responder.agent.model_catalog.prices`) when both are set, else ``model_spec``'s list prices.
    ``input_tokens`` counts the cache reads and writes too."""
    from incident_responder.agent.model_catalog import prices

    found = prices(model_spec)
    return None if found is None else round(found.cost(input_tokens, output_tokens, cache_read, cache_write), 4)


def collect(clients: Any, incident_id: str, *, state_table: str, context_table: str) -> dict[str, Any] | None:
    """Everything the page shows, from the incident-state table ``state_table`` (the incident, its undo ledger) and
    the incident-context table ``context_table``; ``None`` when the state table has no such incident. What cannot be
    read (an artifact gone, a history expired) is named in ``unavailable`` instead of failing the page."""
    from incident_responder.remediation.ledger import Ledger
    from incident_responder.reporting.transcript import transcripts
    from incident_responder.reporting.view import read_incident
    from incident_responder.state.store import read_artifact

    found = read_incident(clients, incident_id, state_table=state_table, context_table=context_table)
    if found is None:
        return None
    detail, state, records = found["shown"], found["state"], found["records"]
    unavailable: list[str] = detail.pop("unavailable", [])
    detail["function_name"] = state.get("function_name")
    detail["execution_arn"] = state.get("execution_arn")
    detail["alert"] = state.get("incident_json")
    alert = detail["alert"] if isinstance(detail["alert"], dict) else {}  # the state item's incident_json, decoded
    detail["account_id"], detail["region"] = alert.get("account_id"), alert.get("region")
    detail["usage"] = {
        a: r["summary"]["metrics"] for a, r in records.items() if (r.get("summary") or {}).get("metrics")
    }
    detail["evidence_checks"], detail["tool_results"] = [], []
    investigation = records.get("investigation") or {}
    if investigation.get("artifact_uri"):
        try:
            full = read_artifact(clients, investigation["artifact_uri"])
            detail["tool_results"] = full.get("tool_results") or []
            detail["evidence_checks"] = (full.get("evidence_report") or {}).get("checks") or []
        except Exception as exc:  # noqa: BLE001 - the page is still worth having without the tool output
            unavailable.append(f"the investigation's tool output ({type(exc).__name__})")
    try:
        entries = Ledger(clients, state_table, incident_id).entries()
    except Exception as exc:  # noqa: BLE001 - the rest of the page still stands
        entries = []
        unavailable.append(f"the undo ledger ({type(exc).__name__})")
    detail["ledger"] = [e.model_dump(mode="json") for e in entries]
    try:  # the function's earlier incidents (its history item): "seen before", with links to their reports
        detail["seen_before"] = seen_before(clients, state_table, history_key(detail), incident_id)
    except Exception as exc:  # noqa: BLE001 - the rest of the page still stands
        detail["seen_before"] = []
        unavailable.append(f"the function's history ({type(exc).__name__})")
    detail["transcripts"], missing = transcripts(clients, records)
    unavailable += missing
    events = found["events"]
    detail["history"], detail["definition"] = events, None
    if state.get("execution_arn") and events:
        detail["execution_status"] = _ENDS.get(events[-1].get("type"), "RUNNING")
        try:
            described = clients.get("stepfunctions").describe_state_machine_for_execution(
                executionArn=state["execution_arn"]
            )
            detail["definition"] = json.loads(described["definition"])
        except Exception as exc:  # noqa: BLE001 - the page without its picture
            unavailable.append(f"the state machine's definition ({type(exc).__name__})")
    detail["unavailable"] = unavailable
    return detail


SEEN_BEFORE_SHOWN = 5


def history_key(detail: dict[str, Any]) -> str | None:
    """The name the function's history goes by: a member's function by its ARN
    (:func:`incident_responder.core.members.function_key_of`)."""
    from incident_responder.core.members import function_key_of

    name = detail.get("function_name")
    return function_key_of(detail.get("account_id"), detail.get("region"), name) if name else None


def seen_before(clients: Any, state_table: str, function_name: str | None, incident_id: str) -> list[dict[str, Any]]:
    """The function's earlier ended incidents (newest first, at most :data:`SEEN_BEFORE_SHOWN`), as its history
    item holds them (validated: an edited entry is left out)."""
    from incident_responder.memory.history import read_history

    if not function_name:
        return []
    past = read_history(clients, state_table, function_name).incidents
    return [p.model_dump(mode="json") for p in past if p.incident_id != incident_id][:SEEN_BEFORE_SHOWN]


def _seen_before(detail: dict[str, Any]) -> str:
    """Count, the last one's end and status, and each earlier report (a link beside this page's, in the bucket)."""
    past = detail.get("seen_before") or []
    if not past:
        return "<p>No earlier incident of this function in its history.</p>"
    last = past[0]
    rows = [
        [
            f"<a href='../{escape(p['incident_id'])}/report.html'>{escape(p['incident_id'])}</a>",
            _e(p["ended_at"]),
            _e(p["status"]),
            _e(", ".join(p.get("fault_types") or []) or "-"),
            _e("; ".join(f"{a['action_type']}: {a['outcome']}" for a in p.get("actions") or []) or "-"),
            _e(p.get("rolled_back_reason") or p.get("verified_at") or "-"),
        ]
        for p in past
    ]
    head = (
        f"<p>Seen before: {len(past)} earlier incident{'s' if len(past) > 1 else ''} of this function; the last "
        f"ended {_e(last['ended_at'])} {_e(last['status'])}.</p>"
    )
    return head + _table(["incident", "ended", "status", "fault types", "actions", "verified / rolled back"], rows)


def _cost_of(usage: dict[str, int]) -> float | None:
    return estimated_cost_usd(
        usage["input_tokens"], usage["output_tokens"], usage["cache_read_tokens"], usage["cache_write_tokens"]
    )


def _usage(detail: dict[str, Any]) -> tuple[str, dict[str, int]]:
    from incident_responder.reporting.view import RECORDS

    usage = detail.get("usage") or {}
    totals = {"llm_calls": 0, "tool_calls": 0, "input_tokens": 0, "output_tokens": 0}
    totals |= {"cache_read_tokens": 0, "cache_write_tokens": 0}
    rows = []
    for agent in RECORDS:
        m = usage.get(agent)
        if not m:
            continue
        for key in totals:
            totals[key] += int(m.get(key) or 0)
        cost = _cost_of({key: int(m.get(key) or 0) for key in totals})
        rows.append(
            [_e(agent), _e(m.get("llm_calls", 0)), _e(m.get("tool_calls", 0)), _e(m.get("input_tokens", 0)),
             _e(m.get("output_tokens", 0)), _e(m.get("latency_ms", "-")), "-" if cost is None else f"${cost:.4f}"]
        )  # fmt: skip
    if not rows:
        return "<p>No agent ran.</p>", totals
    cost = _cost_of(totals)
    rows.append(
        ["<b>total</b>", _e(totals["llm_calls"]), _e(totals["tool_calls"]), _e(totals["input_tokens"]),
         _e(totals["output_tokens"]), "", "-" if cost is None else f"<b>${cost:.4f}</b>"]
    )  # fmt: skip
    note = (
        ""
        if cost is not None
        else "<p class='muted'>Cost: set PRICE_PER_MTOK_INPUT and PRICE_PER_MTOK_OUTPUT (USD per million tokens).</p>"
    )
    headers = ["agent", "model calls", "tool calls", "input tokens", "output tokens", "ms", "cost"]
    return _table(headers, rows) + note, totals


def execution_svg(detail: dict[str, Any]) -> str | None:
    """The execution picture of :func:`collect`'s ``detail`` (``None`` without a history to draw)."""
    from incident_responder.reporting.picture import render_svg, state_times
    from incident_responder.state.lifecycle import entered_states

    definition = detail.get("definition")
    if not definition:
        return None
    events = detail.get("history") or []
    visited = entered_states(events)
    status = detail.get("execution_status", "")
    return render_svg(
        definition,
        visited,
        failed=status not in ("SUCCEEDED", "RUNNING", ""),
        running=status == "RUNNING",
        times=state_times(events),
    )


def _picture(detail: dict[str, Any]) -> str:
    svg = execution_svg(detail)
    return f'<div class="picture">{svg}</div>' if svg else "<p>No execution history to draw.</p>"


def render_html(detail: dict[str, Any], *, generated_at: datetime | None = None) -> str:
    """The page for :func:`collect`'s ``detail`` (or a dict with some of its keys)."""
    from incident_responder.reporting.transcript import redactions_html, transcript_html
    from incident_responder.reporting.view import alert_to_end_seconds

    status = detail.get("status") or "UNKNOWN"
    colour = STATUS_COLOURS.get(status, "#c62828")
    diagnosis = detail.get("diagnosis") or {}
    usage_html, totals = _usage(detail)
    cost = _cost_of(totals)
    spent = alert_to_end_seconds(detail.get("timings") or {})
    cards = [
        ("status", status),
        ("function", detail.get("function_name") or "-"),
        ("account, Region", " ".join(filter(None, (detail.get("account_id"), detail.get("region")))) or "-"),
        ("fault types", ", ".join(diagnosis.get("fault_types") or []) or "-"),
        ("confidence", diagnosis.get("confidence") or "-"),
        ("alert to end", f"{spent:.1f} s" if spent else "-"),
        ("model calls", totals["llm_calls"]),
        ("tool calls", totals["tool_calls"]),
        ("tokens", f"{totals['input_tokens'] + totals['output_tokens']:,}"),
        ("cost", f"${cost:.4f}" if cost is not None else "-"),
        ("seen before", len(detail.get("seen_before") or [])),
    ]
    error = (
        f'<p class="error"><b>{_e(detail.get("error_category") or "error")}</b>: {_e(detail.get("error_reason") or "")}</p>'
        if detail.get("error_category") or detail.get("error_reason")
        else ""
    )
    alert = detail.get("alert")
    sections = [
        ("Timeline", _timeline(detail), "timeline"),
        ("Execution", _picture(detail), "execution"),
        ("Alert", _pre(alert) if alert else "<p>The alert is not stored.</p>", "alert"),
        ("Diagnosis", _diagnosis(detail), "diagnosis"),
        ("Evidence", _evidence(detail), "evidence"),
        ("Proposal and review", _proposal(detail), "proposal"),
        ("Decision, actions and verification", _decision_and_actions(detail), "actions"),
        ("Seen before", _seen_before(detail), "seen-before"),
        ("Model and tool usage", usage_html + redactions_html(detail.get("transcripts") or {}), "usage"),
        ("Transcript", transcript_html(detail.get("transcripts") or {}), "transcript"),
    ]
    unavailable = detail.get("unavailable") or []
    footer = (
        f"<p class='muted'>Generated {(generated_at or datetime.now(UTC)).strftime('%Y-%m-%d %H:%M:%S UTC')} by "
        f"<code>responder report</code>."
        + "".join(f"<br>Stored: <code>{_e(uri)}</code>" for uri in detail.get("artifacts") or [])
        + "".join(f"<br>Not available: {_e(what)}" for what in unavailable)
        + "</p>"
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
        f"<meta name='viewport' content='width=device-width'><title>{_e(status)}: incident {_e(detail.get('incident_id'))}</title>"
        f"<style>{CSS}</style></head><body>"
        f"<header><h1>Incident {_e(detail.get('incident_id'))}<span class='status' style='background:{colour}'>{_e(status)}</span></h1>"
        f"<div class='sub'>function {_e(detail.get('function_name') or '-')}</div></header><main>"
        + error
        + "<div class='cards'>"
        + "".join(f"<div class='card'><span>{escape(k)}</span><b>{_e(v)}</b></div>" for k, v in cards)
        + "</div><nav>"
        + "".join(f"<a href='#{a}'>{escape(t)}</a>" for t, _, a in sections)
        + "</nav>"
        + "".join(_section(t, body, a) for t, body, a in sections)
        + footer
        + "</main></body></html>\n"
    )
