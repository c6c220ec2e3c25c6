"""AWAITING_APPROVAL: a person approves exactly the actions they were shown, once.

The state machine waits on a task token (``lambda:invoke.waitForTaskToken``). :func:`request_approval`
stores the approval record (``approval#<incident_id>`` in the incident-state table) with the token
*hashed* and bound to the digest of the exact actions shown, then sends a person the request with an
approve and a reject link. A link carries the incident, the digest, the decision, the token (base64url)
and a key of its own: it is a bearer secret, whoever holds it can decide, but only what it says. The
record keeps each link's key hashed beside its decision, so a reject link edited to say approve (the
token is the same in both) is refused.

:func:`decide` is the single place a decision is made, for the approval page (channel ``link``) and
``responder approve`` (channel ``cli``) alike: the link's token must hash to the record's, its digest
must be the record's and the record's actions must still have that digest, the request must not have
expired, and the record is claimed with a conditional write (``used`` false -> true), so two clicks
at once decide once. Only then is Step Functions told: SendTaskSuccess with the
:class:`~incident_responder.core.contracts.ApprovalDecision`, or SendTaskFailure ``ApprovalRejected``.

The approval page (:func:`handle_http`): GET only shows what would be decided (mail scanners
prefetch links, so a GET never decides); the page's button POSTs, and the POST decides.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import html
import json
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    INCIDENT_ID_PATTERN,
    ActionVerdict,
    ApprovalChannel,
    ApprovalDecision,
    Incident,
    RemediationAction,
    actions_digest,
)
from incident_responder.notify.notifications import quote, subject_line

RECORD_PREFIX = "approval#"
REJECTED_ERROR = "ApprovalRejected"  # the ASL's Catch on "Wait for approval" routes it to REJECTED
DIGEST_PATTERN = re.compile(r"^sha256:[0-9a-f]{64}$")
_INCIDENT_ID = re.compile(INCIDENT_ID_PATTERN)
_TOKEN_B64 = re.compile(r"^[A-Za-z0-9_-]{1,8192}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
# What Step Functions answers for a token that no longer waits: the task timed out, was answered,
# or its execution ended.
TOKEN_GONE_CODES = {"TaskTimedOut", "InvalidToken", "TaskDoesNotExist"}
MAX_ACTIONS_IN_MESSAGE = 20
PARAMETERS_IN_MESSAGE = 1500  # characters of compact JSON per action in the message; the page shows all


# -- errors: each refusal has its own class (and HTTP status on the page) ---------------------------
class ApprovalError(Exception):
    """A decision that cannot be made; the message says why, for the person who tried."""

    status = 400
    title = "This request cannot be used"


class MalformedApprovalRequestError(ApprovalError):
    status = 400
    title = "This link is incomplete or malformed"


class ApprovalNotFoundError(ApprovalError):
    status = 404
    title = "No such approval request"


class ApprovalTamperedError(ApprovalError):
    """The link's token or digest is not the record's: altered, or replaced by a newer request."""

    status = 403
    title = "This link does not match the approval request"


class ApprovalExpiredError(ApprovalError):
    status = 410
    title = "This approval request has expired"


class ApprovalNoLongerPendingError(ApprovalError):
    """Step Functions no longer waits on the token (timed out, answered, or the execution ended)."""

    status = 410
    title = "This approval request has expired or was already answered"


class ApprovalAlreadyUsedError(ApprovalError):
    status = 409
    title = "This approval request was already decided"


class NotAwaitingApprovalError(ApprovalError):
    """The incident exists but is not waiting for a person (``responder approve``)."""

    status = 409
    title = "This incident is not awaiting approval"


class InvalidApprovalRequestError(ValueError):
    """What the state machine passed cannot be shown to a person (an ASL error name: goes to ERROR)."""


# -- the record ------------------------------------------------------------------------------------
def record_key(incident_id: str) -> str:
    return f"{RECORD_PREFIX}{incident_id}"


def hash_token(task_token: str) -> str:
    return hashlib.sha256(task_token.encode("utf-8")).hexdigest()


def encode_token(task_token: str) -> str:
    """The task token as it travels in a link: base64url without padding (task tokens hold any character)."""
    return base64.urlsafe_b64encode(task_token.encode("utf-8")).decode("ascii").rstrip("=")


def decode_token(encoded: str) -> str:
    if not _TOKEN_B64.match(encoded or ""):
        raise MalformedApprovalRequestError("the link's token is not base64url text")
    try:
        return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise MalformedApprovalRequestError("the link's token does not decode") from None


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def flat(text: Any, limit: int) -> str:
    """Untrusted text on one line (control characters removed), capped; for records and headers."""
    value = re.sub(r"\s+", " ", _CONTROL.sub(" ", str(text or ""))).strip()
    return value if len(value) <= limit else value[: limit - 1] + "…"


class ApprovalRecord(BaseModel):
    """The ``approval#<incident_id>`` item: what was shown, bound to the hashed token, and its decision."""

    model_config = ConfigDict(extra="ignore")

    incident_id: str
    function_name: str
    token_hash: str
    link_keys: dict[str, str] = Field(default_factory=dict)  # decision -> hash of that link's key
    actions_digest: str
    actions: list[dict]
    verdicts: list[dict] = Field(default_factory=list)
    summary: str = ""
    risk: str = ""
    created_at: str
    approval_expires_at: str
    approval_expires_epoch: int
    execution_arn: str
    used: bool = False
    decision: str | None = None
    decided_by: str | None = None
    decided_at: str | None = None
    channel: str | None = None
    reason: str | None = None
    delivery_error: str | None = None

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> ApprovalRecord:
        plain: dict[str, Any] = {}
        for key, typed in item.items():
            ((kind, value),) = typed.items()
            if kind == "N":
                plain[key] = int(float(value))
            elif kind == "S" and key.endswith("_json"):
                plain[key.removesuffix("_json")] = json.loads(value)
            else:
                plain[key] = value
        plain["incident_id"] = str(plain["incident_id"]).removeprefix(RECORD_PREFIX)
        return cls.model_validate(plain)

    def expired(self, now: datetime) -> bool:
        return now > _parse_iso(self.approval_expires_at)

    def verdict_for(self, execution_order: int) -> dict | None:
        return next((v for v in self.verdicts if v.get("execution_order") == execution_order), None)


def load_record(clients: AwsClients, table: str, incident_id: str) -> ApprovalRecord | None:
    item = (
        clients.get("dynamodb")
        .get_item(TableName=table, Key={"incident_id": {"S": record_key(incident_id)}}, ConsistentRead=True)
        .get("Item")
    )
    return ApprovalRecord.from_item(item) if item else None


# -- AWAITING_APPROVAL: the request ----------------------------------------------------------------
class _ReviewShown(BaseModel):
    """The parts of the review (ReviewResult) a person is shown; the rest is ignored here."""

    model_config = ConfigDict(extra="ignore")

    actions: list[RemediationAction] = Field(min_length=1)
    actions_digest: str = Field(pattern=DIGEST_PATTERN.pattern)
    verdicts: list[ActionVerdict] = Field(default_factory=list)
    rejected: list[dict] = Field(default_factory=list)
    risk: str = ""
    summary: str = ""


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
        "incident_id": {"S": record_key(incident.incident_id)},
        "function_name": {"S": incident.function_name},
        "token_hash": {"S": hash_token(task_token)},
        "link_keys_json": {"S": json.dumps({d: hash_token(key) for d, key in keys.items()}, sort_keys=True)},
        "actions_digest": {"S": shown.actions_digest},
        "actions_json": {"S": json.dumps(actions, sort_keys=True)},
        "verdicts_json": {"S": json.dumps([v.model_dump(mode="json") for v in shown.verdicts], sort_keys=True)},
        "summary": {"S": flat(shown.summary, 2000)},
        "risk": {"S": shown.risk or _max_risk(actions)},
        "created_at": {"S": _iso(now)},
        "approval_expires_at": {"S": _iso(expires)},
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
    subject, message = approval_message(incident, shown, actions, evidence, links, _iso(expires), timeout_seconds)
    clients.get("sns").publish(TopicArn=topic_arn, Subject=subject, Message=message)
    if chat_topic_arn:
        from incident_responder.notify.chat import awaiting_approval

        chat = awaiting_approval(
            incident.incident_id, incident.function_name, actions, shown.risk or _max_risk(actions), _iso(expires)
        )
        clients.get("sns").publish(TopicArn=chat_topic_arn, Message=json.dumps(chat))
    return _iso(expires)


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
    lines = [
        f"Incident {incident.incident_id} on function {incident.function_name} is waiting for a person.",
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


# -- the decision ----------------------------------------------------------------------------------
def check_link(record: ApprovalRecord, decision: str, key: str) -> None:
    """A link decides only what it was sent to decide: its key must hash to the one kept for its decision."""
    kept = record.link_keys.get(decision)
    if kept is None or not hmac.compare_digest(hash_token(key), kept):
        raise ApprovalTamperedError(
            f"this link was not sent to {decision}: its decision or key was altered (open the link as it came)"
        )


def check(record: ApprovalRecord | None, incident_id: str, digest: str, token: str, now: datetime) -> ApprovalRecord:
    """The refusals, in order: unknown, altered token, altered digest (or record), already used, expired."""
    if record is None:
        raise ApprovalNotFoundError(
            f"there is no approval request for incident {incident_id} (unknown incident, or its request was removed)"
        )
    if not hmac.compare_digest(hash_token(token), record.token_hash):
        raise ApprovalTamperedError(
            "this link's token does not match the approval request: the link was altered, "
            "or a newer request replaced it (use the newest message)"
        )
    if not hmac.compare_digest(digest, record.actions_digest):
        raise ApprovalTamperedError(
            "this link's digest is not the digest of the actions under approval: it was altered"
        )
    if actions_digest(record.actions) != record.actions_digest:
        raise ApprovalTamperedError("the stored actions no longer match their digest: the record was altered")
    if record.used and record.delivery_error:
        raise ApprovalNoLongerPendingError(
            "this approval request has expired or was already answered: Step Functions no longer waits for it "
            f"({record.delivery_error.rsplit(': ', 1)[-1]}); nothing was decided"
        )
    if record.used:
        raise ApprovalAlreadyUsedError(
            f"this approval request was already decided: {record.decision or 'decided'} by "
            f"{record.decided_by or 'someone'} at {record.decided_at or 'an earlier time'} (through {record.channel or '?'})"
        )
    if record.expired(now):
        raise ApprovalExpiredError(
            f"this approval request expired at {record.approval_expires_at}; nothing was decided"
        )
    return record


def decide(
    clients: AwsClients,
    *,
    table: str,
    incident_id: str,
    digest: str,
    token: str,
    decision: Literal["approve", "reject"],
    decided_by: str,
    channel: ApprovalChannel,
    reason: str | None = None,
    link_key: str | None = None,
    sfn: Any = None,
    now: datetime | None = None,
) -> ApprovalDecision:
    """Decide once: check the token and digest against the record, claim it, tell Step Functions.

    ``token`` is the raw task token (the link carries it base64url-encoded: :func:`decode_token`); through a link
    (channel ``link``), ``link_key`` must be that link's key for this decision (:func:`check_link`).
    Raises an :class:`ApprovalError` subclass for each refusal.
    """
    if decision not in ("approve", "reject"):
        raise MalformedApprovalRequestError(f"decision must be approve or reject, not {flat(decision, 20)!r}")
    if not _INCIDENT_ID.match(incident_id or "") or not DIGEST_PATTERN.match(digest or "") or not token:
        raise MalformedApprovalRequestError("the incident id, digest or token is missing or malformed")
    now = now or datetime.now(UTC)
    record = check(load_record(clients, table, incident_id), incident_id, digest, token, now)
    if channel == "link":
        check_link(record, decision, link_key or "")
    result = ApprovalDecision(
        decision=decision,
        decided_by=flat(decided_by, 512) or "unknown",
        decided_at=_iso(now),
        channel=channel,
        actions_digest=record.actions_digest,
        reason=flat(reason, 1000) or None,
    )
    _claim(clients, table, record, result, token, now)
    sfn = sfn or clients.get("stepfunctions")
    try:
        if decision == "approve":
            sfn.send_task_success(taskToken=token, output=result.model_dump_json())
        else:
            sfn.send_task_failure(taskToken=token, error=REJECTED_ERROR, cause=result.model_dump_json())
    except Exception as exc:
        code = getattr(exc, "response", {}).get("Error", {}).get("Code")
        if code in TOKEN_GONE_CODES:
            _record_delivery_error(clients, table, incident_id, code)
            raise ApprovalNoLongerPendingError(
                f"this approval request has expired or was already answered (Step Functions: {code}); nothing was decided"
            ) from None
        # Not delivered for another reason (throttled, unreachable): give the claim back, so it can be tried again.
        _release(clients, table, incident_id, result)
        raise
    return result


def _claim(
    clients: AwsClients, table: str, record: ApprovalRecord, result: ApprovalDecision, token: str, now: datetime
) -> None:
    ddb = clients.get("dynamodb")
    values: dict[str, Any] = {
        ":true": {"BOOL": True},
        ":false": {"BOOL": False},
        ":hash": {"S": hash_token(token)},
        ":digest": {"S": record.actions_digest},
        ":now": {"N": str(int(now.timestamp()))},
        ":decision": {"S": result.decision},
        ":by": {"S": result.decided_by},
        ":at": {"S": result.decided_at},
        ":channel": {"S": result.channel},
    }
    update = "SET used = :true, decision = :decision, decided_by = :by, decided_at = :at, channel = :channel"
    if result.reason:
        update += ", reason = :reason"
        values[":reason"] = {"S": result.reason}
    try:
        ddb.update_item(
            TableName=table,
            Key={"incident_id": {"S": record_key(record.incident_id)}},
            UpdateExpression=update,
            # The same checks again, atomically with the claim: a concurrent click, or a newer request, wins.
            ConditionExpression="used = :false AND token_hash = :hash AND actions_digest = :digest "
            "AND approval_expires_epoch >= :now",
            ExpressionAttributeValues=values,
        )
    except ddb.exceptions.ConditionalCheckFailedException:
        check(load_record(clients, table, record.incident_id), record.incident_id, record.actions_digest, token, now)
        raise ApprovalExpiredError(
            f"this approval request expired at {record.approval_expires_at}; nothing was decided"
        ) from None


def _release(clients: AwsClients, table: str, incident_id: str, result: ApprovalDecision) -> None:
    ddb = clients.get("dynamodb")
    with contextlib.suppress(ddb.exceptions.ConditionalCheckFailedException):  # someone else's claim: keep it
        ddb.update_item(
            TableName=table,
            Key={"incident_id": {"S": record_key(incident_id)}},
            UpdateExpression="SET used = :false REMOVE decision, decided_by, decided_at, channel, reason",
            ConditionExpression="decided_at = :at AND decided_by = :by",
            ExpressionAttributeValues={
                ":false": {"BOOL": False},
                ":at": {"S": result.decided_at},
                ":by": {"S": result.decided_by},
            },
        )


def _record_delivery_error(clients: AwsClients, table: str, incident_id: str, code: str) -> None:
    clients.get("dynamodb").update_item(
        TableName=table,
        Key={"incident_id": {"S": record_key(incident_id)}},
        UpdateExpression="SET delivery_error = :e",
        ExpressionAttributeValues={":e": {"S": f"Step Functions no longer waits on the token: {code}"}},
    )


# -- pending approvals (responder pending) ---------------------------------------------------------
def pending_records(clients: AwsClients, table: str, now: datetime | None = None) -> list[ApprovalRecord]:
    """Approval records not yet decided and not expired, soonest expiry first."""
    now = now or datetime.now(UTC)
    ddb = clients.get("dynamodb")
    kwargs: dict[str, Any] = {
        "TableName": table,
        "FilterExpression": "begins_with(incident_id, :prefix) AND used = :false AND approval_expires_epoch >= :now",
        "ExpressionAttributeValues": {
            ":prefix": {"S": RECORD_PREFIX},
            ":false": {"BOOL": False},
            ":now": {"N": str(int(now.timestamp()))},
        },
    }
    records: list[ApprovalRecord] = []
    while True:
        page = ddb.scan(**kwargs)
        records += [ApprovalRecord.from_item(item) for item in page.get("Items", [])]
        if "LastEvaluatedKey" not in page:
            break
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    records = [r for r in records if not r.expired(now)]
    return sorted(records, key=lambda r: r.approval_expires_at)


def task_token_from_history(events: list[dict[str, Any]], state_name: str = "Wait for approval") -> str | None:
    """The task token of the newest task scheduled by ``state_name`` (a retried request gets a new one)."""
    current, token = None, None
    for event in events:
        if "stateEnteredEventDetails" in event:
            current = event["stateEnteredEventDetails"].get("name")
        elif event.get("type") == "TaskScheduled" and current == state_name:
            try:
                parameters = json.loads(event["taskScheduledEventDetails"]["parameters"])
                payload = parameters.get("Payload")
                payload = json.loads(payload) if isinstance(payload, str) else payload
                token = payload.get("task_token") or token
            except (KeyError, TypeError, ValueError, AttributeError):
                continue
    return token


# -- the approval page -----------------------------------------------------------------------------
# In the page too (a saved copy keeps it); frame-ancestors works only as a header.
CSP_META = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'"
CSP = CSP_META + "; frame-ancestors 'none'"
SECURITY_HEADERS = {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": CSP,
    "referrer-policy": "no-referrer",  # the token is in the URL: never send it to another site
    "cache-control": "no-store",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
}
MAX_FORM_BYTES = 16_384
_PARAMS = ("incident", "digest", "decision", "token", "key")

_STYLE = """
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
main{max-width:880px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 8px} h2{font-size:17px;margin:24px 0 8px}
.card{background:#fff;border:1px solid #d8dce3;border-radius:8px;padding:14px 16px;margin:10px 0}
.meta{color:#4b5563} code,pre{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:#f7f8fa;border:1px solid #e3e6eb;border-radius:6px;padding:10px;overflow:auto;white-space:pre-wrap;word-break:break-all}
.risk-high{color:#b42318;font-weight:600}.risk-medium{color:#b54708;font-weight:600}.risk-low{color:#067647;font-weight:600}
.verdict{margin:6px 0 0} ul{margin:4px 0 0 18px;padding:0}
.digest{word-break:break-all}
button{font-size:16px;padding:10px 18px;border-radius:6px;border:0;color:#fff;cursor:pointer}
.approve{background:#067647}.reject{background:#b42318}
textarea{width:100%;box-sizing:border-box;min-height:70px;font:inherit}
.notice{border-left:4px solid #b54708;padding-left:10px}
.ok{border-left:4px solid #067647;padding-left:10px}.refused{border-left:4px solid #b42318;padding-left:10px}
"""


@dataclass
class HttpResponse:
    status: int
    body: str
    headers: dict[str, str] = field(default_factory=lambda: dict(SECURITY_HEADERS))

    def to_lambda(self) -> dict[str, Any]:
        return {"statusCode": self.status, "headers": self.headers, "body": self.body, "isBase64Encoded": False}


def e(value: Any) -> str:
    """Every value on the page is escaped: all of it came from an alert, a model, or a link."""
    return html.escape(str(value if value is not None else ""), quote=True)


def _page(title: str, content: str) -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        "<meta name=referrer content=no-referrer>"
        f'<meta http-equiv=Content-Security-Policy content="{e(CSP_META)}">'
        f"<title>{e(title)}</title><style>{_STYLE}</style></head><body><main>{content}</main></body></html>"
    )


def _pretty(value: Any) -> str:
    return e(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False))


def _action_cards(record: ApprovalRecord) -> str:
    cards = []
    for action in sorted(record.actions, key=lambda a: a["execution_order"]):
        risk = action.get("risk_level", "medium")
        verdict = record.verdict_for(action["execution_order"])
        if verdict:
            reasons = "".join(f"<li>{e(r)}</li>" for r in verdict.get("reasons") or [])
            policy = "".join(f"<li>policy: {e(p)}</li>" for p in verdict.get("policy") or [])
            evidence = "".join(
                f"<li>verified evidence: <code>{e(p.get('tool'))}</code> <code>{e(p.get('field'))}</code> = "
                f"<code>{e(p.get('value'))}</code></li>"
                for p in verdict.get("evidence") or []
                if isinstance(p, dict) and p.get("verified") is True
            )
            critic = (
                f"<div class=verdict>Critic's verdict: <strong>{e(verdict.get('verdict'))}</strong>"
                f"<ul>{reasons}{policy}{evidence}</ul></div>"
            )
        else:
            critic = "<div class=verdict>Critic's verdict: none recorded</div>"
        reasoning = (
            f"<div class=meta>The resolver model's reasoning (a quote): {e(action.get('reasoning'))}</div>"
            if action.get("reasoning")
            else ""
        )
        cards.append(
            f'<section class="card action"><h3>{e(action["execution_order"])}. <code>{e(action["action_type"])}</code>'
            f" for <code>{e(action['fault_type'])}</code> &middot; risk "
            f'<span class="risk-{e(risk)}">{e(risk)}</span></h3>'
            f"<div>Target: <code>{e(action['target_resource'])}</code></div>"
            f"<div>Parameters:</div><pre>{_pretty(action['parameters'])}</pre>{reasoning}{critic}</section>"
        )
    return "".join(cards)


def render_review_page(record: ApprovalRecord, params: dict[str, str]) -> str:
    """What a GET shows: everything being decided, and one button that POSTs the same parameters."""
    decision = params["decision"]
    verb = "Approve" if decision == "approve" else "Reject"
    count = len(record.actions)
    hidden = "".join(f'<input type=hidden name="{e(k)}" value="{e(params[k])}">' for k in _PARAMS)
    reason = (
        "<p><label for=reason>Reason (recorded with your decision):</label><br>"
        "<textarea id=reason name=reason maxlength=1000></textarea></p>"
        if decision == "reject"
        else ""
    )
    summary = f"<p class=meta>The critic's summary (a quote): {e(record.summary)}</p>" if record.summary else ""
    content = (
        f"<h1>{verb} {count} remediation action{'s' * (count != 1)} for <code>{e(record.function_name)}</code>?</h1>"
        f"<p class=meta>Incident <code>{e(record.incident_id)}</code> &middot; overall risk "
        f'<span class="risk-{e(record.risk)}">{e(record.risk)}</span> &middot; expires at '
        f"<time>{e(record.approval_expires_at)}</time></p>"
        "<p class=notice>Nothing has been decided yet. Opening this page changes nothing; the button below does. "
        "Your decision covers exactly the actions listed here, identified by their digest.</p>"
        f"{summary}<h2>Actions, in the order they would run</h2>{_action_cards(record)}"
        f"<h2>Digest</h2><p class=digest><code>{e(record.actions_digest)}</code></p>"
        f'<form method=post action="?{e(urlencode({k: params[k] for k in _PARAMS}))}">{hidden}{reason}'
        f"<button type=submit class={decision}>{verb} these {count} action{'s' * (count != 1)}</button></form>"
        "<p class=meta>This link is a bearer secret: anyone who has it can decide. Do not forward it.</p>"
    )
    return _page(f"{verb} remediation for {record.function_name}", content)


def render_result_page(decision: ApprovalDecision, record: ApprovalRecord) -> str:
    verb = "Approved" if decision.decision == "approve" else "Rejected"
    then = (
        "The responder now applies exactly these actions, then verifies the function is healthy again."
        if decision.decision == "approve"
        else "Nothing will be applied for this incident."
    )
    reason = f"<p>Reason: {e(decision.reason)}</p>" if decision.reason else ""
    content = (
        f'<h1>{verb}</h1><div class="card ok"><p>{e(then)}</p>'
        f"<p>Incident <code>{e(record.incident_id)}</code>, function <code>{e(record.function_name)}</code>: "
        f"{len(record.actions)} action(s), digest <code class=digest>{e(decision.actions_digest)}</code>.</p>"
        f"<p class=meta>Recorded as decided by {e(decision.decided_by)} at {e(decision.decided_at)}.</p>{reason}</div>"
    )
    return _page(verb, content)


class ApprovalUnavailableError(ApprovalError):
    """AWS could not be reached or refused (the page's 503): nothing was decided, the link still works."""

    status = 503
    title = "The decision could not be recorded right now"


def render_refusal_page(exc: ApprovalError) -> str:
    text = str(exc)
    text = text[:1].upper() + text[1:]
    content = f'<h1>{e(exc.title)}</h1><div class="card refused"><p>{e(text)}</p><p>Nothing was decided.</p></div>'
    return _page(exc.title, content)


def _link_params(params: dict[str, str]) -> dict[str, str]:
    missing = [k for k in _PARAMS if not params.get(k)]
    if missing:
        raise MalformedApprovalRequestError(
            f"this link lacks {', '.join(missing)}: open the link from the message as it is"
        )
    if params["decision"] not in ("approve", "reject"):
        raise MalformedApprovalRequestError("this link's decision is neither approve nor reject")
    if not _INCIDENT_ID.match(params["incident"]) or not DIGEST_PATTERN.match(params["digest"]):
        raise MalformedApprovalRequestError("this link's incident id or digest is malformed")
    return {k: params[k] for k in _PARAMS}


def handle_http(
    clients: AwsClients,
    *,
    table: str,
    method: str,
    query: dict[str, str],
    form: dict[str, str] | None = None,
    decided_by: str,
    now: datetime | None = None,
) -> HttpResponse:
    """The approval page: GET (or HEAD) shows, POST decides; every refusal is a page with its status."""
    method = method.upper()
    if method not in ("GET", "HEAD", "POST"):
        response = HttpResponse(405, render_refusal_page(MalformedApprovalRequestError("use the link's page")))
        response.headers["allow"] = "GET, HEAD, POST"
        return response
    now = now or datetime.now(UTC)
    try:
        params = dict(query)
        for key, value in (form or {}).items():
            if key in _PARAMS and params.get(key) not in (None, value):
                raise MalformedApprovalRequestError("the form does not match the link it came from")
            params[key] = value
        link = _link_params(params)
        token = decode_token(link["token"])
        if method != "POST":  # mail scanners prefetch links: showing must never decide
            record = check(load_record(clients, table, link["incident"]), link["incident"], link["digest"], token, now)
            check_link(record, link["decision"], link["key"])
            return HttpResponse(200, render_review_page(record, link))
        result = decide(
            clients,
            table=table,
            incident_id=link["incident"],
            digest=link["digest"],
            token=token,
            decision=link["decision"],  # type: ignore[arg-type]
            decided_by=decided_by,
            channel="link",
            reason=params.get("reason"),
            link_key=link["key"],
            now=now,
        )
        record = load_record(clients, table, link["incident"])
        assert record is not None
        return HttpResponse(200, render_result_page(result, record))
    except ApprovalError as exc:
        return HttpResponse(exc.status, render_refusal_page(exc))
