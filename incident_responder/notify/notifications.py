"""The operator notification for PROPOSAL_READY, built from validated, typed fields.

Everything structural (function, incident id, fault types, action types, counts) comes from enums
and validated models. Model prose (``root_cause``, an action's ``reasoning``) and model-chosen strings
(``target_resource``) are shown as quotes: control characters removed, one line, capped, labelled
as the model's words, and inert: no link in them stays a link (:func:`inert`), so a sentence or a link a
hostile log line planted in the diagnosis reads as a quote, never as an instruction or a link from the
responder. The responder's own links (the report, the approval pages) are built by the code, never quoted.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

from incident_responder.core.contracts import FaultType, Incident, RemediationProposal
from incident_responder.core.members import place_of

SUBJECT_LIMIT = 99  # SNS refuses a subject of 100 characters or more ("less than 100", the Publish API)
PROSE_LIMIT = 300
VALUE_LIMIT = 120
MAX_ACTIONS_SHOWN = 20
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
# What a reader turns into a link by itself: a scheme (https://, mailto:) and a host name (Slack and mail
# clients link www.evil.example and evil.example/path too, with or without a scheme). A host name ends in a
# top-level domain, letters or punycode: a field path (role.inline_policies.s3-access) is left alone.
_SCHEME = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*):(?=//)|\b(mailto|tel|sms|callto|javascript|data|file|slack):")
_HOST = re.compile(r"(?i)(?<![\w.-])(?:[a-z0-9_-]+\.)+(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})(?![\w-])")


class Notification(BaseModel):
    subject: str
    message: str


def inert(text: str) -> str:
    """``text`` with no link left in it, defanged as incident responders write indicators (``https[:]//evil[.]example``):
    schemes and host names broken, and markdown's ``[text](url)`` split, so no client makes them clickable."""
    text = _SCHEME.sub(lambda m: f"{m.group(1) or m.group(2)}[:]", text)
    text = _HOST.sub(lambda m: m.group(0).replace(".", "[.]"), text)
    return text.replace("](", "] (")


def quote(text: str | None, limit: int = PROSE_LIMIT) -> str:
    """Untrusted text as one quoted, inert line: control characters become spaces, links are defanged
    (:func:`inert`), the length is capped."""
    flat = _CONTROL.sub(" ", text or "").strip()
    flat = inert(re.sub(r"\s+", " ", flat))
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return json.dumps(flat, ensure_ascii=False)


def subject_line(text: str) -> str:
    """An SNS subject: at most SUBJECT_LIMIT characters (SNS refuses longer ones)."""
    return text if len(text) <= SUBJECT_LIMIT else text[: SUBJECT_LIMIT - 1] + "…"


def seen_before_line(seen: list[dict[str, Any]] | None) -> str | None:
    """ "Seen before" from the function's history (validated ids, times and statuses): how many earlier incidents,
    and how the last one ended; None when there was none."""
    if not seen:
        return None
    last = seen[0]
    count = f"{len(seen)} earlier incident{'s' if len(seen) > 1 else ''}"
    return (
        f"Seen before: {count} of this function; the last, {last['incident_id']}, ended {last['ended_at']} "
        f"{last['status']} (its report: reports/{last['incident_id']}/report.html)"
    )


def _parameters(action: dict[str, Any]) -> str:
    parts = []
    for key, value in sorted((action.get("parameters") or {}).items()):
        shown = value if isinstance(value, int | bool) or value is None else quote(json.dumps(value), VALUE_LIMIT)
        parts.append(f"{key}={shown}")
    return ", ".join(parts)


def handover_lines(steps: list[Any], limit: int = MAX_ACTIONS_SHOWN) -> list[str]:
    """The hand-over steps as plain text: the proposer's words quoted, each with the runbook it follows."""
    if not steps:
        return []
    lines = ["Hand-over steps for a person (the proposer's words, a quote; a runbook guides, it never authorises):"]
    for step in steps[:limit]:
        step = step if isinstance(step, dict) else step.model_dump(mode="json")
        cites = f" (follows {step['runbook']})" if step.get("runbook") else ""
        lines.append(f"  - {step.get('fault_type')}: {quote(step.get('text'), 300)}{cites}")
    if len(steps) > limit:
        lines.append(f"  ... and {len(steps) - limit} more in the stored proposal")
    return lines


def proposal_notification(
    incident: Incident, diagnosis: dict[str, Any], proposal: RemediationProposal | None, *, reference: str | None
) -> Notification:
    faults = [FaultType(f).value for f in diagnosis.get("fault_types", [])]
    subject = subject_line(f"Remediation proposed: {incident.function_name} ({', '.join(faults) or 'no fault type'})")
    where = place_of(incident.account_id, incident.region)
    lines = [
        f"Incident {incident.incident_id} on function {incident.function_name}{f' in {where}' if where else ''}.",
        "Nothing has been applied: these are proposals for a person to review.",
        "",
        f"Diagnosed fault types: {', '.join(faults) or 'none'}",
        f"Severity: {diagnosis.get('severity', 'unknown')}; confidence: {diagnosis.get('confidence', 'unknown')}",
        f"Root cause, in the investigating model's words (a quote, not an instruction): {quote(diagnosis.get('root_cause'))}",
        "",
    ]
    actions = proposal.actions if proposal else []
    lines.append(f"Proposed actions ({len(actions)}), each checked by the deterministic guardrails:")
    for action in actions[:MAX_ACTIONS_SHOWN]:
        data = action.model_dump(mode="json")
        approval = "needs approval" if action.requires_approval else "no approval required"
        lines.append(
            f"  {action.execution_order}. {action.action_type.value} for {action.fault_type.value}"
            f" (risk {action.risk_level}, {approval})"
        )
        lines.append(f"     target: {quote(action.target_resource, VALUE_LIMIT)}")
        if params := _parameters(data):
            lines.append(f"     parameters: {params}")
        if action.reasoning:
            lines.append(f"     the proposer model's reasoning (a quote): {quote(action.reasoning)}")
    if len(actions) > MAX_ACTIONS_SHOWN:
        lines.append(f"  ... and {len(actions) - MAX_ACTIONS_SHOWN} more in the stored proposal")
    if not actions:
        lines.append("  none")
    if proposal and proposal.unresolvable_faults:
        lines.append(
            f"Needs a person (no automated action): {', '.join(f.value for f in proposal.unresolvable_faults)}"
        )
    lines += handover_lines(proposal.handover if proposal else [])
    lines.append(f"Rejected by the guardrails: {len(proposal.rejected_actions) if proposal else 0}")
    lines += [
        "",
        f"Inspect: responder show {incident.incident_id}",
        f"Proposal: {reference or 'incident-context table'}",
    ]
    return Notification(subject=subject, message="\n".join(lines))
