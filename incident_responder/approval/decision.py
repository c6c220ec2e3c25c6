"""AWAITING_APPROVAL: the decision, made once, through the approval page or ``responder approve``.

:func:`decide` is the single place a decision is made, for the approval page (channel ``link``) and
``responder approve`` (channel ``cli``) alike: the link's token must hash to the record's, its digest
must be the record's and the record's actions must still have that digest, the request must not have
expired, and the record is claimed with a conditional write (``used`` false -> true), so two clicks
at once decide once. Only then is Step Functions told: SendTaskSuccess with the
:class:`~incident_responder.core.contracts.ApprovalDecision`, or SendTaskFailure ``ApprovalRejected``.
"""

from __future__ import annotations

import contextlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any, Literal

from incident_responder.approval.errors import (
    ApprovalAlreadyUsedError,
    ApprovalExpiredError,
    ApprovalNoLongerPendingError,
    ApprovalNotFoundError,
    ApprovalTamperedError,
    MalformedApprovalRequestError,
)
from incident_responder.approval.record import (
    _INCIDENT_ID,
    DIGEST_PATTERN,
    ApprovalRecord,
    flat,
    load_approval_record,
)
from incident_responder.approval.tokens import hash_token
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import ApprovalChannel, ApprovalDecision, actions_digest
from incident_responder.core.encoding import iso
from incident_responder.state import keys as state_keys

REJECTED_ERROR = "ApprovalRejected"  # the ASL's Catch on "Wait for approval" routes it to REJECTED
# What Step Functions answers for a token that no longer waits: the task timed out, was answered,
# or its execution ended.
TOKEN_GONE_CODES = {"TaskTimedOut", "InvalidToken", "TaskDoesNotExist"}


# -- the decision ----------------------------------------------------------------------------------
def check_link(record: ApprovalRecord, decision: str, key: str) -> None:
    """A link decides only what it was sent to decide: its key must hash to the one kept for its decision."""
    kept = record.link_keys.get(decision)
    if kept is None or not hmac.compare_digest(hash_token(key), kept):
        raise ApprovalTamperedError(
            f"this link was not sent to {decision}: its decision or key was altered (open the link as it came)"
        )


def check_decision(
    record: ApprovalRecord | None, incident_id: str, digest: str, token: str, now: datetime
) -> ApprovalRecord:
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
    record = check_decision(load_approval_record(clients, table, incident_id), incident_id, digest, token, now)
    if channel == "link":
        check_link(record, decision, link_key or "")
    result = ApprovalDecision(
        decision=decision,
        decided_by=flat(decided_by, 512) or "unknown",
        decided_at=iso(now, "milliseconds"),  # as precise as the state machine's stamps: the timeline sorts by them
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
            Key={"incident_id": {"S": state_keys.approval(record.incident_id)}},
            UpdateExpression=update,
            # The same checks again, atomically with the claim: a concurrent click, or a newer request, wins.
            ConditionExpression="used = :false AND token_hash = :hash AND actions_digest = :digest "
            "AND approval_expires_epoch >= :now",
            ExpressionAttributeValues=values,
        )
    except ddb.exceptions.ConditionalCheckFailedException:
        check_decision(
            load_approval_record(clients, table, record.incident_id),
            record.incident_id,
            record.actions_digest,
            token,
            now,
        )
        raise ApprovalExpiredError(
            f"this approval request expired at {record.approval_expires_at}; nothing was decided"
        ) from None


def _release(clients: AwsClients, table: str, incident_id: str, result: ApprovalDecision) -> None:
    ddb = clients.get("dynamodb")
    with contextlib.suppress(ddb.exceptions.ConditionalCheckFailedException):  # someone else's claim: keep it
        ddb.update_item(
            TableName=table,
            Key={"incident_id": {"S": state_keys.approval(incident_id)}},
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
        Key={"incident_id": {"S": state_keys.approval(incident_id)}},
        UpdateExpression="SET delivery_error = :e",
        ExpressionAttributeValues={":e": {"S": f"Step Functions no longer waits on the token: {code}"}},
    )


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
