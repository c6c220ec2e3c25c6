"""A stored incident as ``responder show`` presents it: gathered from the stores, then as text for a person.

:func:`gather` reads the incident's state item, its stored records (investigation, proposal, review) and its
execution's history; :func:`render_text` turns that into a summary and a timeline (each lifecycle state with
its time and how long the incident spent before the next one). ``responder show --json`` prints the gathered
dict itself.
"""

from __future__ import annotations

import json
from typing import Any

from incident_responder.core.encoding import read_time

APPROVAL_KEYS = ("approved_by", "approved_at", "approval_channel", "actions_digest", "rejected_by", "rejection_reason")


RECORDS = ("investigation", "proposal", "review")


def gather(clients: Any, incident_id: str, *, state_table: str, context_table: str) -> dict[str, Any] | None:
    """Everything stored about ``incident_id`` in the incident-state table ``state_table`` and the
    incident-context table ``context_table``; ``None`` when the state table has no such incident."""
    found = read_incident(clients, incident_id, state_table=state_table, context_table=context_table)
    return found["shown"] if found else None


def read_incident(clients: Any, incident_id: str, *, state_table: str, context_table: str) -> dict[str, Any] | None:
    """What :func:`gather` shows (``shown``), and what it was read from: the state item (``state``), the stored
    records (``records``) and the execution's history events (``events``), each read once (the report reuses them)."""
    from incident_responder.state.lifecycle import entered_states, get_incident_state, history
    from incident_responder.state.store import load_record

    state = get_incident_state(clients, state_table, incident_id)
    if state is None:
        return None
    unavailable: list[str] = []

    def record(name: str) -> dict[str, Any]:
        try:
            return load_record(clients, context_table, incident_id, name) or {}
        except Exception as exc:  # noqa: BLE001 - the state item alone is still worth showing
            unavailable.append(f"the {name} record ({type(exc).__name__}: {exc})"[:300])
            return {}

    records = {name: record(name) for name in RECORDS}
    investigation, proposal, review = (records[name] for name in RECORDS)
    events: list[dict[str, Any]] = []
    visited: list[str] = []
    if state.get("execution_arn"):
        try:
            events = history(clients.get("stepfunctions"), state["execution_arn"])
            visited = entered_states(events)
        except Exception as exc:  # noqa: BLE001 - the record is still worth showing without the history
            visited = [f"(history unavailable: {type(exc).__name__})"]
            unavailable.append(f"the execution's history ({type(exc).__name__})")
    shown = {
        "incident_id": incident_id,
        "status": state.get("status"),
        "error_category": state.get("error_category"),
        "error_reason": state.get("error_reason"),
        "timings": {k: v for k, v in state.items() if k.endswith("_at") and k != "expires_at"},
        "diagnosis": investigation.get("summary", {}).get("diagnosis"),
        "evidence": investigation.get("summary", {}).get("evidence"),
        "proposal": proposal.get("summary", {}).get("proposal"),
        "review": review.get("summary"),
        "approval": {k: state[k] for k in APPROVAL_KEYS if k in state} or None,
        "verification": state.get("verification_json"),
        "rollback": {k: state[k] for k in ("rollback_reason", "undo_json") if k in state} or None,
        "states_visited": visited,
        "artifacts": [r.get("artifact_uri") for r in (investigation, proposal, review) if r.get("artifact_uri")],
        **({"unavailable": unavailable} if unavailable else {}),
    }
    return {"shown": shown, "state": state, "records": records, "events": events}


def timeline(timings: dict[str, Any]) -> list[tuple[str, str, float | None]]:
    """(state, time, seconds until the next state) in the order they happened; unreadable times last."""
    timings = {k: v for k, v in timings.items() if k != "updated_at"}  # the item's last write, not a state
    known = sorted(((stamp, key) for key, value in timings.items() if (stamp := read_time(value))), key=lambda p: p[0])
    rows: list[tuple[str, str, float | None]] = []
    for index, (stamp, key) in enumerate(known):
        following = known[index + 1][0] if index + 1 < len(known) else None
        spent = (following - stamp).total_seconds() if following else None
        rows.append((key.removesuffix("_at").upper(), stamp.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z", spent))
    rows += [
        (key.removesuffix("_at").upper(), str(value), None) for key, value in timings.items() if not read_time(value)
    ]
    return rows


def alert_to_end_seconds(timings: dict[str, Any]) -> float | None:
    """From the first recorded time (the alert's) to the last (the end), in seconds; ``None`` without two."""
    rows = timeline(timings)
    spent = [s for _, _, s in rows if s is not None]
    return round(sum(spent), 3) if spent else None


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def verification_of(shown: dict[str, Any]) -> dict[str, Any]:
    """The verification as a dict, whether stored as JSON text (the state item) or already parsed."""
    verification = shown.get("verification")
    if isinstance(verification, str):
        try:
            verification = json.loads(verification)
        except ValueError:
            verification = {"summary": verification}
    return verification if isinstance(verification, dict) else {}


def render_text(shown: dict[str, Any], *, hint: bool = True) -> str:
    """The incident for a person: what happened, what was found and done, and when (``responder show``, and the
    lab's ``run`` and ``demo`` for the record they end with; ``hint``: the closing pointer to ``--json``)."""
    lines = [f"incident {shown['incident_id']}: {shown.get('status') or 'UNKNOWN'}"]
    if shown.get("error_category") or shown.get("error_reason"):
        lines.append(f"  error: [{shown.get('error_category') or '-'}] {shown.get('error_reason') or ''}".rstrip())
    diagnosis = shown.get("diagnosis") or {}
    if diagnosis:
        lines.append(f"  root cause: {diagnosis.get('root_cause', '-')}")
        lines.append(
            f"  fault types: {', '.join(diagnosis.get('fault_types') or []) or '-'}; "
            f"severity {diagnosis.get('severity', '-')}; confidence {diagnosis.get('confidence', '-')}"
        )
        if diagnosis.get("failure_modes"):
            lines.append(f"  failure modes: {', '.join(diagnosis['failure_modes'])} (docs/failure-catalogue.md)")
        for gap in diagnosis.get("investigation_gaps") or []:
            lines.append(f"  not checked: {gap}")
    # The diagnosis holds the pointers; the stored summary ("evidence") their count and the grounded ratio.
    pointers = [e for e in diagnosis.get("evidence") or [] if isinstance(e, dict)]
    evidence = shown.get("evidence")
    report: dict[str, Any] = evidence if isinstance(evidence, dict) else {}
    if pointers or report:
        total = report.get("total", len(pointers))
        verified = report.get("verified", sum(1 for e in pointers if e.get("verified")))
        grounded = f"; grounded ratio {report['grounded_ratio']}" if report.get("grounded_ratio") is not None else ""
        lines.append(f"  evidence: {total} pointer(s), {verified} verified against the tool output{grounded}")
        for e in pointers:
            mark = "verified" if e.get("verified") else "UNVERIFIED"
            lines.append(
                f"    [{mark}] {e.get('tool')} {e.get('field')} = {_short(e.get('value'), 70)}: {e.get('interpretation', '')}"
            )
    for step in diagnosis.get("remediation_plan") or []:
        lines.append(
            f"    plan: {step.get('action')} (risk {step.get('risk_level')}, evidence {step.get('evidence_basis')})"
        )
    proposal = shown.get("proposal") or {}
    if proposal:
        actions = proposal.get("actions") or []
        lines.append(f"  proposal: {len(actions)} action(s), {proposal.get('confidence', '-')} confidence")
        for a in actions:
            needs = "approval required" if a.get("requires_approval") else "no approval required"
            lines.append(
                f"    {a.get('execution_order')}. {a.get('action_type')} on {a.get('target_resource')} "
                f"[{a.get('risk_level')} risk, {needs}]"
            )
            lines.append(f"       {_short(a.get('parameters'))}")
        for r in proposal.get("rejected_actions") or []:
            lines.append(
                f"    rejected by guardrails: {(r.get('action') or {}).get('action_type')}: {'; '.join(r.get('reasons') or [])}"
            )
        if proposal.get("unresolvable_faults"):
            lines.append(f"    needs a person: {', '.join(proposal['unresolvable_faults'])}")
        for s in proposal.get("handover") or []:
            cites = f" [{s['runbook']}]" if s.get("runbook") else ""
            lines.append(f"    hand-over ({s.get('fault_type')}): {_short(s.get('text'), 200)}{cites}")
    review = shown.get("review") or {}
    if review:
        lines.append(f"  critic: {review.get('outcome', '-')}: {review.get('summary', '')}".rstrip())
        for v in review.get("verdicts") or []:
            policy = f" (policy: {'; '.join(v['policy'])})" if v.get("policy") else ""
            lines.append(f"    action {v.get('execution_order')}: {v.get('verdict')}{policy}")
    approval = shown.get("approval") or {}
    if approval.get("approved_by"):
        lines.append(
            f"  approved by {approval['approved_by']} ({approval.get('approval_channel', '-')}) at {approval.get('approved_at', '-')}"
        )
    if approval.get("rejected_by"):
        reason = f": {approval['rejection_reason']}" if approval.get("rejection_reason") else ""
        lines.append(f"  rejected by {approval['rejected_by']}{reason}")
    verification = verification_of(shown)
    if verification:
        lines.append(f"  verification: {verification.get('outcome', '-')}: {verification.get('summary', '')}".rstrip())
    rollback = shown.get("rollback") or {}
    if rollback.get("rollback_reason"):
        lines.append(f"  rolled back: {rollback['rollback_reason']}")
    rows = timeline(shown.get("timings") or {})
    if rows:
        lines.append("  timeline:")
        for state, when, spent in rows:
            lines.append(f"    {state:<20} {when}" + (f"  {spent:7.1f} s" if spent is not None else ""))
    visited = shown.get("states_visited") or []
    if visited:
        lines.append(f"  states visited: {' -> '.join(visited)}")
    for uri in shown.get("artifacts") or []:
        lines.append(f"  artifact: {uri}")
    for what in shown.get("unavailable") or []:
        lines.append(f"  not readable: {what}")
    if hint:
        lines.append("  (responder show --json prints the whole record)")
    return "\n".join(lines)
