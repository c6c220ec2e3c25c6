"""Messages for a chat channel through Amazon Q Developer in chat applications (Slack, Microsoft Teams):
custom notifications (schema version 1.0, ``client-markdown``), one thread per incident.

Two moments reach the channel: an incident waits for a person (the approval request function) and an
incident ended (the report function, with the link to its report). The approval links are never posted: they
are bearer credentials, and a channel is wider than the approvers; the channel gets the command that decides
with one's own credentials (``responder approve``), and the links stay with the approval topic's subscribers.
Model prose is quoted on one capped, inert line (:func:`incident_responder.notify.notifications.quote`), with
Slack's control characters escaped (:func:`said`): the only links and mentions in a message are the code's own.
"""

from __future__ import annotations

from typing import Any

from incident_responder.core.members import place_of
from incident_responder.notify.notifications import quote, seen_before_line


def escape_control(text: str) -> str:
    """``&``, ``<`` and ``>`` as Slack says to send them (its only control characters: ``<url|text>``,
    ``<!channel>`` and ``<@user>`` are written with them), so the text shows as typed."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def said(text: str | None, limit: int) -> str:
    """Untrusted text (the models', the alert's) for the channel: quoted, inert, and no control sequence."""
    return escape_control(quote(text, limit))


def _notification(
    incident_id: str, event_type: str, title: str, description: list[str], steps: list[str], keywords: list[str],
    related: list[str] | None = None,
) -> dict[str, Any]:  # fmt: skip
    return {
        "version": "1.0",
        "source": "custom",
        "id": f"{incident_id}:{event_type}",
        "content": {
            "textType": "client-markdown",
            "title": title,
            "description": "\n".join(description),
            "nextSteps": steps,
            "keywords": keywords,
        },
        "metadata": {
            "threadId": incident_id,  # one thread per incident in the channel
            "summary": title,
            "eventType": event_type,
            "relatedResources": related or [],
            "additionalContext": {"incident_id": incident_id},
        },
    }


def handover_said(steps: list[dict[str, Any]], limit: int = 6) -> list[str]:
    """The hand-over steps for the channel: the proposer's words quoted, each with the runbook it follows."""
    lines = []
    for step in [s for s in steps if isinstance(s, dict)][:limit]:
        cites = f" (follows `{escape_control(str(step['runbook']))}`)" if step.get("runbook") else ""
        lines.append(f"- {escape_control(str(step.get('fault_type')))}: {said(step.get('text'), 200)}{cites}")
    if len(steps) > limit:
        lines.append(f"... and {len(steps) - limit} more in the report")
    return ["Hand-over steps (a runbook guides them, never authorises):", *lines] if lines else []


def incident_ended(detail: dict[str, Any], url: str | None, report_uri: str) -> dict[str, Any]:
    """An incident reached its final status (``detail``: :func:`incident_responder.reporting.report.collect`)."""
    incident_id, status = detail["incident_id"], detail.get("status") or "UNKNOWN"
    function = detail.get("function_name") or "unknown function"
    if detail.get("function_name") and (where := place_of(detail.get("account_id"), detail.get("region"))):
        function = f"{function} ({where})"
    diagnosis = detail.get("diagnosis") or {}
    description = [f"*{status}*"]
    if diagnosis:
        description.append(f"Fault types: {', '.join(diagnosis.get('fault_types') or []) or 'none'}")
        description.append(f"Root cause (the model's words): {said(diagnosis.get('root_cause'), 200)}")
    if detail.get("error_reason"):
        description.append(f"Why: {said(detail.get('error_reason'), 200)}")
    description += handover_said((detail.get("proposal") or {}).get("handover") or [])
    if seen := seen_before_line(detail.get("seen_before")):
        description.append(seen)
    steps = [f"<{url}|Open the incident report>"] if url else []
    steps.append(f"`responder report {incident_id}`")
    return _notification(
        incident_id, "IncidentEnded", f"Incident on {function}: {status}", description, steps, [status, function],
        [report_uri],
    )  # fmt: skip


def awaiting_approval(
    incident_id: str,
    function_name: str,
    actions: list[dict[str, Any]],
    risk: str,
    expires_at: str,
    handover: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An incident waits for a person to approve exactly these actions."""
    lines = [f"*AWAITING_APPROVAL* ({risk or 'unknown'} risk), until {expires_at}"]
    for a in sorted(actions, key=lambda a: a.get("execution_order", 0))[:10]:
        lines.append(
            f"{a.get('execution_order')}. `{a.get('action_type')}` for {a.get('fault_type', '-')} "
            f"on {said(str(a.get('target_resource', '')), 120)} ({a.get('risk_level', '-')} risk)"
        )
    if len(actions) > 10:
        lines.append(f"... and {len(actions) - 10} more")
    lines += handover_said(handover or [])
    steps = [
        f"`responder approve {incident_id}` (or `--reject`) decides with your own AWS credentials",
        "the approve / reject links went to the approval topic's subscribers",
    ]
    return _notification(
        incident_id, "ApprovalRequested", f"Approval needed: {function_name}", lines, steps,
        ["AWAITING_APPROVAL", function_name],
    )  # fmt: skip
