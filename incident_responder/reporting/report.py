"""One incident as a self-contained HTML page: what happened, what was found, proposed, decided, done and
verified, when, and at what cost.

    detail = collect(clients, incident_id)      # the stores, the artifacts, the undo ledger, the history
    html = render_html(detail)                   # one page, no external assets, no script

:func:`collect` adds to :func:`incident_responder.reporting.view.gather` what a page can show beside it: the
alert, each tool output an evidence pointer quotes (from the investigation's full record in S3), every
agent's usage, the undo ledger (before and after of each action), the execution's history and the state
machine's definition (for the picture). Everything shown is escaped, and the page forbids scripts and remote
loads (a Content-Security-Policy), so a hostile log line quoted as evidence stays text.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from html import escape
from typing import Any

OUTPUT_LIMIT = 4000  # characters of one tool output shown beside its evidence pointer
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


def collect(clients: Any, incident_id: str) -> dict[str, Any] | None:
    """Everything the page shows; ``None`` when the state table has no such incident. What cannot be read
    (an artifact gone, a history expired) is named in ``unavailable`` instead of failing the page."""
    from incident_responder.remediation.remediate import Ledger
    from incident_responder.reporting.view import read_incident
    from incident_responder.state.lifecycle import state_table_name
    from incident_responder.state.store import read_artifact

    found = read_incident(clients, incident_id)
    if found is None:
        return None
    detail, state, records = found["shown"], found["state"], found["records"]
    unavailable: list[str] = detail.pop("unavailable", [])
    detail["function_name"] = state.get("function_name")
    detail["execution_arn"] = state.get("execution_arn")
    detail["alert"] = state.get("incident_json")
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
        entries = Ledger(clients, state_table_name(), incident_id).entries()
    except Exception as exc:  # noqa: BLE001 - the rest of the page still stands
        entries = []
        unavailable.append(f"the undo ledger ({type(exc).__name__})")
    detail["ledger"] = [e.model_dump(mode="json") for e in entries]
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


# -- the page -----------------------------------------------------------------------------------------------
def _e(value: Any) -> str:
    return escape(value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True))


def _pre(value: Any, limit: int = OUTPUT_LIMIT) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, default=str, sort_keys=True)
    cut = f"\n… ({len(text) - limit} more characters in the stored record)" if len(text) > limit else ""
    return f"<pre>{escape(text[:limit])}{escape(cut)}</pre>"


def _marked(text: str, excerpt: str, limit: int = OUTPUT_LIMIT) -> str:
    """``text`` escaped, with the quoted ``excerpt`` highlighted where it occurs."""
    where = text.find(excerpt) if len(excerpt) >= 3 else -1
    if where < 0:
        return _pre(text, limit)
    start = max(0, where - limit // 2)
    shown = text[start : start + limit]
    where -= start
    return (
        "<pre>"
        + ("…" if start else "")
        + escape(shown[:where])
        + f"<mark>{escape(shown[where : where + len(excerpt)])}</mark>"
        + escape(shown[where + len(excerpt) :])
        + ("…" if start + limit < len(text) else "")
        + "</pre>"
    )


def _when(value: Any) -> str:
    from incident_responder.reporting.view import _when as parse

    stamp = parse(value) if value else None
    return stamp.strftime("%Y-%m-%d %H:%M:%S UTC") if stamp else escape(str(value or "-"))


def _section(title: str, body: str, anchor: str) -> str:
    return f'<section id="{anchor}"><h2>{escape(title)}</h2>{body}</section>'


def _table(headers: list[str] | None, rows: list[list[str]]) -> str:
    """Rows of HTML cells; ``headers`` None: a two-column list of names and values."""
    if headers is None:
        body = "".join(f"<tr><th>{row[0]}</th><td>{row[1]}</td></tr>" for row in rows)
        return f'<table class="fields"><tbody>{body}</tbody></table>'
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _evidence(detail: dict[str, Any]) -> str:
    from incident_responder.agent.evidence import resolve_path, value_matches

    diagnosis = detail.get("diagnosis") or {}
    pointers = [p for p in diagnosis.get("evidence") or [] if isinstance(p, dict)]
    if not pointers:
        return "<p>No evidence pointers: no diagnosis was made.</p>"
    checks = {c.get("index"): c for c in detail.get("evidence_checks") or []}
    results = detail.get("tool_results") or []
    parts = []
    for index, pointer in enumerate(pointers):
        verified = bool(pointer.get("verified"))
        badge = '<span class="ok">verified</span>' if verified else '<span class="bad">not verified</span>'
        reason = (checks.get(index) or {}).get("reason")
        claimed = str(pointer.get("value", ""))
        found = [
            v
            for r in results
            if r.get("tool") == pointer.get("tool")
            for v in resolve_path(r.get("result"), pointer.get("field", ""))
        ]
        if not results:
            output = (
                "<p class='muted'>The tool output is not stored here (no artifacts bucket, or it was not readable).</p>"
            )
        elif not found:
            output = (
                f"<p class='muted'>Nothing at {_e(pointer.get('field'))} in any {_e(pointer.get('tool'))} result.</p>"
            )
        else:
            match = next((v for v in found if value_matches(claimed, v)), found[0])
            text = match if isinstance(match, str) else json.dumps(match, indent=2, default=str, sort_keys=True)
            output = _marked(text, claimed)
        parts.append(
            '<div class="evidence"><div class="claim">'
            f"<p>{badge} <b>{_e(pointer.get('tool'))}</b> <code>{_e(pointer.get('field'))}</code></p>"
            f"<p>quoted: <code>{_e(claimed)}</code></p><p>{_e(pointer.get('interpretation', ''))}</p>"
            + (f"<p class='muted'>{_e(reason)}</p>" if reason else "")
            + f'</div><div class="output"><p class="muted">tool output at that path</p>{output}</div></div>'
        )
    return "".join(parts)


def _diagnosis(detail: dict[str, Any]) -> str:
    diagnosis = detail.get("diagnosis") or {}
    if not diagnosis:
        return "<p>No diagnosis.</p>" + (
            f"<p>{_e(detail.get('error_reason'))}</p>" if detail.get("error_reason") else ""
        )
    report = detail.get("evidence") if isinstance(detail.get("evidence"), dict) else {}
    rows = [
        ["root cause", _e(diagnosis.get("root_cause", "-"))],
        ["fault types", _e(", ".join(diagnosis.get("fault_types") or []) or "-")],
        ["severity", _e(diagnosis.get("severity", "-"))],
        [
            "confidence",
            _e(diagnosis.get("confidence", "-"))
            + (" (capped: evidence not all verified)" if report.get("confidence_capped") else ""),
        ],
        ["grounded ratio", _e(report.get("grounded_ratio", "-"))],
    ]
    gaps = diagnosis.get("investigation_gaps") or []
    rows.append(
        ["investigation gaps", "<ul>" + "".join(f"<li>{_e(g)}</li>" for g in gaps) + "</ul>" if gaps else "none"]
    )
    plan = diagnosis.get("remediation_plan") or []
    if plan:
        rows.append(
            [
                "plan",
                "<ol>"
                + "".join(f"<li>{_e(s.get('action'))} (risk {_e(s.get('risk_level'))})</li>" for s in plan)
                + "</ol>",
            ]
        )
    return _table(None, rows)


def _proposal(detail: dict[str, Any]) -> str:
    proposal = detail.get("proposal") or {}
    if not proposal:
        return "<p>Nothing was proposed.</p>"
    rows = [
        [
            _e(a.get("execution_order")),
            f"<b>{_e(a.get('action_type'))}</b><br><span class='muted'>{_e(a.get('target_resource'))}</span>",
            _pre(a.get("parameters") or {}, 1500),
            _e(a.get("risk_level")),
            "yes" if a.get("requires_approval") else "no",
            _e(a.get("reasoning", "")),
        ]
        for a in proposal.get("actions") or []
    ]
    body = (
        _table(["#", "action", "parameters", "risk", "approval", "why (the model's words)"], rows)
        if rows
        else "<p>No actions.</p>"
    )
    rejected = proposal.get("rejected_actions") or []
    if rejected:
        body += "<h3>Rejected by the guardrails</h3>" + _table(
            ["action", "reasons"],
            [
                [_e((r.get("action") or {}).get("action_type")), "<br>".join(_e(x) for x in r.get("reasons") or [])]
                for r in rejected
            ],
        )
    if proposal.get("unresolvable_faults"):
        body += f"<p>Needs a person: {_e(', '.join(proposal['unresolvable_faults']))}</p>"
    review = detail.get("review") or {}
    if review:
        body += f"<h3>Critic: {_e(review.get('outcome', '-'))}</h3><p>{_e(review.get('summary', ''))}</p>"
        verdicts = review.get("verdicts") or []
        if verdicts:
            body += _table(
                ["action", "verdict", "the critic's reasons (its words)", "policy (the system's)", "evidence"],
                [
                    [
                        _e(v.get("execution_order")),
                        _e(v.get("verdict")),
                        "<br>".join(_e(r) for r in v.get("reasons") or []),
                        _e("; ".join(v.get("policy") or [])),
                        "<br>".join(
                            f"{'verified' if p.get('verified') else 'not verified'}: {_e(p.get('tool'))} "
                            f"<code>{_e(p.get('field'))}</code>"
                            for p in v.get("evidence") or []
                            if isinstance(p, dict)
                        ),
                    ]
                    for v in verdicts
                ],
            )
    return body


def _decision_and_actions(detail: dict[str, Any]) -> str:
    from incident_responder.reporting.view import verification_of

    parts = []
    approval = detail.get("approval") or {}
    if approval.get("approved_by"):
        parts.append(
            f"<p>Approved by <b>{_e(approval['approved_by'])}</b> ({_e(approval.get('approval_channel', '-'))}) at "
            f"{_when(approval.get('approved_at'))}; actions digest <code>{_e(approval.get('actions_digest', '-'))}</code>.</p>"
        )
    elif approval.get("rejected_by"):
        parts.append(
            f"<p>Rejected by <b>{_e(approval['rejected_by'])}</b>"
            + (f": {_e(approval['rejection_reason'])}" if approval.get("rejection_reason") else "")
            + ".</p>"
        )
    elif detail.get("status") == "APPROVAL_EXPIRED":
        parts.append("<p>Nobody decided before the approval expired: nothing was applied.</p>")
    ledger = detail.get("ledger") or []
    if ledger:
        parts.append(
            _table(
                ["#", "action", "before (recorded to undo it)", "after (applied)", "progress"],
                [
                    [
                        _e(e["execution_order"]),
                        f"<b>{_e(e['action'].get('action_type'))}</b><br><span class='muted'>{_e(e['action'].get('target_resource'))}</span>",
                        _pre(e.get("prior") or {}, 1500),
                        _pre(e["action"].get("parameters") or {}, 1500),
                        _e(e.get("progress"))
                        + (f"<br>applied {_when(e['applied_at'])}" if e.get("applied_at") else "")
                        + (f"<br>undone {_when(e['undone_at'])}" if e.get("undone_at") else "")
                        + (f"<br><span class='bad'>{_e(e['error'])}</span>" if e.get("error") else ""),
                    ]
                    for e in ledger
                ],
            )
        )
    verification = verification_of(detail)
    if verification:
        parts.append(
            f"<h3>Verification: {_e(verification.get('outcome', '-'))}</h3><p>{_e(verification.get('summary', ''))}</p>"
        )
        checks = {k: v for k, v in verification.items() if k not in ("outcome", "summary")}
        if checks:
            parts.append(_pre(checks, 3000))
    rollback = detail.get("rollback") or {}
    if rollback.get("rollback_reason"):
        parts.append(f"<h3>Rolled back</h3><p>{_e(rollback['rollback_reason'])}</p>")
    return "".join(parts) or "<p>Nothing was applied to the account.</p>"


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


def _timeline(detail: dict[str, Any]) -> str:
    from incident_responder.reporting.view import timeline

    rows = timeline(detail.get("timings") or {})
    if not rows:
        return "<p>No times recorded.</p>"
    longest = max((spent for _, _, spent in rows if spent), default=0) or 1
    return _table(
        ["state", "at", "time to the next", ""],
        [
            [
                f"<b>{_e(state)}</b>",
                _e(when),
                "" if spent is None else f"{spent:.1f} s",
                "" if not spent else f'<div class="bar" style="width:{max(2, 240 * spent / longest):.0f}px"></div>',
            ]
            for state, when, spent in rows
        ],
    )


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


CSS = """
body{font:14px/1.45 -apple-system,'Segoe UI',Helvetica,Arial,sans-serif;color:#212121;margin:0;background:#fafafa}
header{background:#263238;color:#fff;padding:18px 28px}header h1{margin:0;font-size:20px}
header .sub{color:#cfd8dc;margin-top:4px}.status{display:inline-block;padding:3px 10px;border-radius:12px;
color:#fff;font-weight:600;margin-left:8px;font-size:13px}main{padding:8px 28px 40px;max-width:1400px}
nav{margin:12px 0}nav a{margin-right:14px;color:#1565c0;text-decoration:none}
section{background:#fff;border:1px solid #e0e0e0;border-radius:6px;padding:6px 18px 14px;margin:14px 0}
h2{font-size:17px;border-bottom:1px solid #eee;padding-bottom:6px}h3{font-size:15px;margin:14px 0 6px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;vertical-align:top;padding:5px 8px;
border-bottom:1px solid #eee}th{background:#f5f5f5;font-weight:600}.fields th{width:170px;background:none;color:#616161}
pre{background:#f6f8fa;border:1px solid #e1e4e8;border-radius:4px;padding:8px;margin:0;white-space:pre-wrap;
word-break:break-word;font-size:12px;max-height:320px;overflow:auto}code{background:#f6f8fa;padding:1px 4px;border-radius:3px}
mark{background:#fff176;padding:0 1px}.ok{color:#fff;background:#2e7d32;border-radius:3px;padding:1px 6px;font-size:12px}
.bad{color:#fff;background:#c62828;border-radius:3px;padding:1px 6px;font-size:12px}.muted{color:#757575}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:14px 0}.card{background:#fff;border:1px solid #e0e0e0;
border-radius:6px;padding:10px 14px;min-width:130px}.card b{display:block;font-size:18px}
.card span{color:#757575;font-size:12px}.evidence{display:grid;grid-template-columns:minmax(260px,1fr) 2fr;
gap:14px;border-top:1px solid #eee;padding:10px 0}.evidence p{margin:3px 0}
.bar{height:10px;background:#90caf9;border-radius:2px}.picture{overflow:auto;max-height:900px;border:1px solid #eee}
.error{background:#ffebee;border:1px solid #ef9a9a;border-radius:4px;padding:8px 12px}
"""


def render_html(detail: dict[str, Any], *, generated_at: datetime | None = None) -> str:
    """The page for :func:`collect`'s ``detail`` (or a dict with some of its keys)."""
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
        ("fault types", ", ".join(diagnosis.get("fault_types") or []) or "-"),
        ("confidence", diagnosis.get("confidence") or "-"),
        ("alert to end", f"{spent:.1f} s" if spent else "-"),
        ("model calls", totals["llm_calls"]),
        ("tool calls", totals["tool_calls"]),
        ("tokens", f"{totals['input_tokens'] + totals['output_tokens']:,}"),
        ("cost", f"${cost:.4f}" if cost is not None else "-"),
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
        ("Model and tool usage", usage_html, "usage"),
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
