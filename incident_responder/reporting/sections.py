"""REPORTED: the report's sections on what the agents found and did: diagnosis and evidence, proposal and review,
decision, actions and verification, timeline."""

from __future__ import annotations

import json
from typing import Any

from incident_responder.reporting.markup import _e, _marked, _pre, _table, _when


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


def _failure_modes(ids: list[str]) -> str:
    """Each failure catalogue entry the diagnosis matched: its id and title, and the AWS pages that document it."""
    from incident_responder.catalogue.queries import MODES_BY_ID

    items = []
    for mode_id in ids:
        mode = MODES_BY_ID.get(str(mode_id))
        if mode is None:
            items.append(f"<li><code>{_e(mode_id)}</code></li>")
            continue
        # As text, not links: the report links nowhere outside itself.
        pages = ", ".join(f"<code>{_e(url)}</code>" for url in mode.sources)
        items.append(f"<li><code>{_e(mode.id)}</code>: {_e(mode.title)} <span class='muted'>({pages})</span></li>")
    return "<ul>" + "".join(items) + "</ul>" if items else "-"


def _diagnosis(detail: dict[str, Any]) -> str:
    diagnosis = detail.get("diagnosis") or {}
    if not diagnosis:
        return "<p>No diagnosis.</p>" + (
            f"<p>{_e(detail.get('error_reason'))}</p>" if detail.get("error_reason") else ""
        )
    evidence = detail.get("evidence")
    report: dict[str, Any] = evidence if isinstance(evidence, dict) else {}
    rows = [
        ["root cause", _e(diagnosis.get("root_cause", "-"))],
        ["fault types", _e(", ".join(diagnosis.get("fault_types") or []) or "-")],
        ["failure modes", _failure_modes(diagnosis.get("failure_modes") or [])],
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
    if proposal.get("handover"):
        body += (
            "<h3>Hand-over steps (the proposer's words; a runbook guides them, never authorises)</h3><ol>"
            + "".join(
                f"<li>{_e(s.get('text'))} <span class='muted'>({_e(s.get('fault_type'))}"
                + (f"; follows <code>{_e(s['runbook'])}</code>" if s.get("runbook") else "")
                + ")</span></li>"
                for s in proposal["handover"]
                if isinstance(s, dict)
            )
            + "</ol>"
        )
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
