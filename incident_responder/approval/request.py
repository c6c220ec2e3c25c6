"""AWAITING_APPROVAL: the request, which asks a person to approve exactly the actions shown.

The state machine waits on a task token (``lambda:invoke.waitForTaskToken``). :func:`request_approval`
stores the approval record (``approval#<incident_id>`` in the incident-state table,
:func:`incident_responder.state.keys.approval`) with the token
*hashed* and bound to the digest of the exact actions shown, then sends a person the request with an
approve and a reject link. A link carries the incident, the digest, the decision, the token (base64url)
and a key of its own: it is a bearer secret, whoever holds it can decide, but only what it says. The
record keeps each link's key hashed beside its decision, so a reject link edited to say approve (the
token is the same in both) is refused.
"""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from incident_responder.approval.errors import InvalidApprovalRequestError
from incident_responder.approval.record import DIGEST_PATTERN, flat
from incident_responder.approval.tokens import encode_token, hash_token
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import ActionVerdict, HandoverStep, Incident, RemediationAction, actions_digest
from incident_responder.core.encoding import iso
from incident_responder.core.members import place_of
from incident_responder.notify.notifications import handover_lines, quote, subject_line
from incident_responder.state import keys as state_keys

MAX_ACTIONS_IN_MESSAGE = 20
PARAMETERS_IN_MESSAGE = 1500  # characters of compact JSON per action in the message; the page shows all


# -- AWAITING_APPROVAL: the request ----------------------------------------------------------------
class _ReviewShown(BaseModel):
    """The parts of the review (ReviewResult) a person is shown; the rest is ignored here."""

    model_config = ConfigDict(extra="ignore")

    actions: list[RemediationAction] = Field(min_length=1)
    actions_digest: str = Field(pattern=DIGEST_PATTERN.pattern)
    verdicts: list[ActionVerdict] = Field(default_factory=list)
    handover: list[HandoverStep] = Field(default_factory=list)
    rejected: list[dict] = Field(default_factory=list)
    risk: str = ""
    summary: str = ""
    history: list[str] = Field(default_factory=list, max_length=40)  # the memory rules' words (ReviewResult)


def request_approval(
    clients: AwsClients,
    *,
    table: str,
    topic_arn: str,
    approval_url: str,
    incident: Incident | dict,
    review: dict,
    task_token: str,
    timeout_seconds: int,
    execution_arn: str,
    ttl_days: int,
    now: datetime | None = None,
    chat_topic_arn: str | None = None,
) -> str:
    """Store the approval record and send the request with its two links; returns approval_expires_at (ISO).
    With ``chat_topic_arn``, a chat channel hears that the incident waits, without the links (:mod:`.chat`).

    A new request for the same incident (the state's Retry sent it again) replaces the record: the
    new token is the one Step Functions waits on, and the old links no longer match it.
    """
    try:
        incident = incident if isinstance(incident, Incident) else Incident.model_validate(incident)
        shown = _ReviewShown.model_validate(review)
    except ValidationError as exc:
        raise InvalidApprovalRequestError(f"the review cannot be shown for approval: {exc}") from None
    if not task_token or timeout_seconds < 1 or not execution_arn:
        raise InvalidApprovalRequestError("task_token, timeout_seconds (>= 1) and execution_arn are required")
    # Stored and shown exactly as the review gave them (validated above): their digest is what is approved.
    actions = [dict(a) for a in review["actions"]]
    if actions_digest(actions) != shown.actions_digest:
        # Never ask a person to approve a digest that is not the digest of what they are shown.
        raise InvalidApprovalRequestError("the review's actions_digest is not the digest of its actions")
    now = now or datetime.now(UTC)
    expires = now + timedelta(seconds=timeout_seconds)
    evidence = verified_evidence(review)
    keys = {d: secrets.token_urlsafe(24) for d in DECISIONS}  # one per link: the decision it may make
    item = {
        "incident_id": {"S": state_keys.approval(incident.incident_id)},
        "function_name": {"S": incident.function_name},
        **({"where": {"S": where}} if (where := place_of(incident.account_id, incident.region)) else {}),
        "token_hash": {"S": hash_token(task_token)},
        "link_keys_json": {"S": json.dumps({d: hash_token(key) for d, key in keys.items()}, sort_keys=True)},
        "actions_digest": {"S": shown.actions_digest},
        "actions_json": {"S": json.dumps(actions, sort_keys=True)},
        "verdicts_json": {"S": json.dumps([v.model_dump(mode="json") for v in shown.verdicts], sort_keys=True)},
        "summary": {"S": flat(shown.summary, 2000)},
        "handover_json": {"S": json.dumps([s.model_dump(mode="json") for s in shown.handover], sort_keys=True)},
        "history_json": {"S": json.dumps([flat(h, 1000) for h in shown.history])},
        "risk": {"S": shown.risk or _max_risk(actions)},
        "created_at": {"S": iso(now)},
        "approval_expires_at": {"S": iso(expires)},
        "approval_expires_epoch": {"N": str(int(expires.timestamp()))},
        "execution_arn": {"S": execution_arn},
        "used": {"BOOL": False},
        "expires_at": {"N": str(int((expires + timedelta(days=ttl_days)).timestamp()))},
    }
    clients.get("dynamodb").put_item(TableName=table, Item=item)
    links = {
        d: approval_link(approval_url, incident.incident_id, shown.actions_digest, d, task_token, keys[d])
        for d in DECISIONS
    }
    subject, message = approval_message(incident, shown, actions, evidence, links, iso(expires), timeout_seconds)
    clients.get("sns").publish(TopicArn=topic_arn, Subject=subject, Message=message)
    if chat_topic_arn:
        from incident_responder.notify.chat import awaiting_approval

        chat = awaiting_approval(
            incident.incident_id,
            f"{incident.function_name} ({where})" if where else incident.function_name,
            actions,
            shown.risk or _max_risk(actions),
            iso(expires),
            [s.model_dump(mode="json") for s in shown.handover],
        )
        clients.get("sns").publish(TopicArn=chat_topic_arn, Message=json.dumps(chat))
    return iso(expires)


DECISIONS = ("approve", "reject")


def approval_link(base_url: str, incident_id: str, digest: str, decision: str, task_token: str, key: str) -> str:
    query = urlencode(
        {"incident": incident_id, "digest": digest, "decision": decision, "token": encode_token(task_token), "key": key}
    )
    return f"{base_url}{'&' if '?' in base_url else '?'}{query}"


RISK_ORDER = {"low": 0, "medium": 1, "high": 2}


def _max_risk(actions: list[dict]) -> str:
    return max((a.get("risk_level", "medium") for a in actions), key=lambda r: RISK_ORDER.get(r, 1), default="")


def verified_evidence(review: dict) -> list[dict]:
    """Evidence pointers the system verified against real tool output: the critic's, and any diagnosis'."""
    pointers: list[dict] = []
    for verdict in review.get("verdicts") or []:
        pointers += [dict(p, execution_order=verdict.get("execution_order")) for p in verdict.get("evidence") or []]
    for source in (review, review.get("diagnosis") or {}, review.get("investigation") or {}):
        if isinstance(source, dict):
            pointers += list(source.get("evidence") or [])
    seen, out = set(), []
    for p in pointers:
        if not isinstance(p, dict) or p.get("verified") is not True:
            continue
        key = (p.get("tool"), p.get("field"), p.get("value"))
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def approval_message(
    incident: Incident,
    shown: _ReviewShown,
    actions: list[dict],
    evidence: list[dict],
    links: dict[str, str],
    expires_at: str,
    timeout_seconds: int,
) -> tuple[str, str]:
    """The request a person reads (plain text): what would change, the critic's view, the two links."""
    risk = shown.risk or _max_risk(actions)
    subject = subject_line(
        f"Approval needed: {incident.function_name} ({len(actions)} action{'s' * (len(actions) != 1)}, risk {risk})"
    )
    where = place_of(incident.account_id, incident.region)
    lines = [
        f"Incident {incident.incident_id} on function {incident.function_name}{f' in {where}' if where else ''} "
        "is waiting for a person.",
        "Nothing has been changed yet: the actions below are applied only if you approve them.",
        "",
        f"Alert: source {incident.source}, detected at {quote(incident.detected_at, 40)}",
    ]
    if incident.alarm_name:
        lines.append(f"  alarm name (as the alarm's owner wrote it, a quote): {quote(incident.alarm_name, 200)}")
    if incident.metric_name:
        lines.append(f"  metric: {quote(incident.metric_name, 100)}")
    if incident.qualifier:  # validated as a Lambda alias or version: no quoting needed
        lines.append(f"  alias or version the alarm watches: {incident.qualifier}")
    if incident.resolved_from:
        lines.append(f"  function found through: {quote(incident.resolved_from, 300)}")
    if incident.error_type or incident.error_message:
        lines.append(
            f"  error (from the failing code, a quote): {quote(incident.error_type, 100)} {quote(incident.error_message)}"
        )
    if incident.reason:
        lines.append(f"  alarm reason (a quote): {quote(incident.reason)}")
    if shown.summary:
        lines += ["", f"The critic's summary (the reviewing model's words, a quote): {quote(shown.summary)}"]
    if shown.history:  # the memory rules' words, from the responder's own records of the function's past incidents
        lines += ["", "Seen before (this function's past incidents, as the responder recorded them):"]
        lines += [f"  - {quote(h, 400)}" for h in shown.history[:10]]
    lines += ["", f"Actions to approve ({len(actions)}, overall risk {risk}), in the order they would run:"]
    verdicts = {v.execution_order: v for v in shown.verdicts}
    for action in actions[:MAX_ACTIONS_IN_MESSAGE]:
        order = action["execution_order"]
        lines.append(
            f"  {order}. {action['action_type']} for {action['fault_type']} (risk {action.get('risk_level', 'medium')})"
        )
        lines.append(f"     target: {quote(action['target_resource'], 300)}")
        params = json.dumps(action["parameters"], sort_keys=True, ensure_ascii=True, separators=(",", ":"))
        if len(params) > PARAMETERS_IN_MESSAGE:
            params = params[:PARAMETERS_IN_MESSAGE] + " ... (cut here; the approval page shows them all)"
        lines.append(f"     parameters: {params}")
        verdict = verdicts.get(order)
        if verdict:
            lines.append(f"     critic's verdict: {verdict.verdict.value}")
            lines += [f"       - reason (a quote): {quote(r)}" for r in verdict.reasons]
            lines += [f"       - policy: {quote(p)}" for p in verdict.policy]
        else:
            lines.append("     critic's verdict: none recorded")
    if len(actions) > MAX_ACTIONS_IN_MESSAGE:
        lines.append(f"  ... and {len(actions) - MAX_ACTIONS_IN_MESSAGE} more: the approval page shows every action")
    if shown.rejected:
        lines.append(f"Rejected by the critic and not part of this request: {len(shown.rejected)}")
    if shown.handover:
        lines += ["", *handover_lines(shown.handover)]
    if evidence:
        lines += ["", "Verified evidence (each checked against the tool output it cites):"]
        for p in evidence[:20]:
            lines.append(
                f"  - {quote(p.get('tool'), 60)} {quote(p.get('field'), 120)} = {quote(p.get('value'), 200)}"
                f"; read as (a quote): {quote(p.get('interpretation'), 200)}"
            )
    minutes = round(timeout_seconds / 60)
    lines += [
        "",
        f"Digest of exactly these actions: {shown.actions_digest}",
        f"This request expires at {expires_at} (in {minutes} minute{'s' * (minutes != 1)}).",
        "",
        "Opening a link shows the actions again; nothing is decided until you press the button on that page.",
        f"Approve: {links['approve']}",
        f"Reject:  {links['reject']}",
        "",
        "These links are a bearer secret: anyone who has them can decide. Do not forward this message.",
        f"Or, with your own AWS credentials: responder approve {incident.incident_id} [--reject --reason TEXT]",
    ]
    return subject, "\n".join(lines)
