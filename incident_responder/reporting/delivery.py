"""When an incident's execution ends: its report to the artifacts bucket, a link to it for operators (and for
a chat channel), and the end counted.

An EventBridge rule runs the report function on every end of the lifecycle state machine's executions
(SUCCEEDED, FAILED, TIMED_OUT, ABORTED); the lab runs the same function where moto cannot deliver the event.
The page is ``reports/<incident id>/report.html``; the notification carries a pre-signed URL to it. A
pre-signed URL lives as long as the credentials that signed it: signed by a Lambda role, at most until
that role session ends, however long ``ExpiresIn`` asks for; ``responder report INCIDENT_ID`` makes a page at
any time from the stores.
"""

from __future__ import annotations

import json
import time
from typing import Any

from incident_responder.core.members import place_of
from incident_responder.notify.notifications import quote, seen_before_line, subject_line

REPORT_KEY = "reports/{incident_id}/report.html"
MAX_LINK_SECONDS = 7 * 24 * 3600  # SigV4's limit for a pre-signed URL
# Reported and counted, but nobody is told: the circuit breaker suppresses an alert storm's incidents so that
# a storm costs nothing, and a message per suppressed incident would be a storm of its own.
UNANNOUNCED = frozenset({"SUPPRESSED"})


def _settled(
    clients: Any, state_table: str, context_table: str, incident_id: str, execution_status: str, wait_seconds: float
) -> dict[str, Any] | None:
    """The incident's detail once its state is terminal: an execution that failed, timed out or was aborted is
    marked by the reconcile function, on the same event, possibly a moment after this one starts. Only the
    state item is read while waiting; everything else once."""
    from incident_responder.reporting.report import collect
    from incident_responder.state.lifecycle import TERMINAL_STATUSES, get_incident_state

    deadline = time.monotonic() + wait_seconds
    while execution_status != "SUCCEEDED" and time.monotonic() < deadline:
        state = get_incident_state(clients, state_table, incident_id)
        if state is None or state.get("status") in TERMINAL_STATUSES:
            break
        time.sleep(0.5)
    return collect(clients, incident_id, state_table=state_table, context_table=context_table)


def report_message(detail: dict[str, Any], url: str | None, link_hours: float) -> tuple[str, str]:
    """Subject and plain-text body: what ended how, the model's words quoted, and where the report is."""
    incident_id, status = detail["incident_id"], detail.get("status") or "UNKNOWN"
    function = detail.get("function_name") or "unknown function"
    subject = subject_line(f"Incident report: {function} {status} ({incident_id})")
    diagnosis = detail.get("diagnosis") or {}
    where = place_of(detail.get("account_id"), detail.get("region")) if detail.get("function_name") else ""
    lines = [f"Incident {incident_id} on {function}{f' in {where}' if where else ''} ended {status}."]
    if detail.get("error_category") or detail.get("error_reason"):
        lines.append(f"Why: [{detail.get('error_category') or '-'}] {quote(detail.get('error_reason'))}")
    if diagnosis:
        lines.append(f"Fault types: {', '.join(diagnosis.get('fault_types') or []) or 'none'}")
        lines.append(f"Root cause, in the investigating model's words (a quote): {quote(diagnosis.get('root_cause'))}")
    if seen := seen_before_line(detail.get("seen_before")):
        lines.append(seen)
    ledger = detail.get("ledger") or []
    if ledger:
        lines.append("Actions applied by the responder:")
        lines += [f"  {e['execution_order']}. {e['action']['action_type']} ({e.get('progress')})" for e in ledger]
    lines.append("")
    if url:
        lines.append(f"Report (the link works for up to {link_hours:g} hours): {url}")
    lines.append(f"Or make it again at any time: responder report {incident_id}")
    return subject, "\n".join(lines)


def _remember(clients: Any, state_table: str, detail: dict[str, Any], key: str, ttl_days: int) -> str:
    """The ended incident into its function's history; what happened, in a word (a failure here never costs the
    report or its notice: the history only loses this incident)."""
    from incident_responder.memory.record import past_incident, remember
    from incident_responder.reporting.report import history_key

    function_name = history_key(detail)
    entry = past_incident(detail, key)
    if not function_name or entry is None:
        return "not_remembered"
    try:
        remember(clients, state_table, function_name, entry, ttl_days=ttl_days)
    except Exception as exc:  # noqa: BLE001 - the report and its notice go out regardless
        return f"failed: {type(exc).__name__}"
    return "remembered"


def deliver(
    clients: Any,
    *,
    execution_arn: str,
    execution_status: str,
    state_table: str,
    context_table: str,
    bucket: str,
    topic_arn: str | None,
    link_hours: float,
    chat_topic_arn: str | None = None,
    wait_seconds: float = 10.0,
    memory_ttl_days: int | None = None,
) -> dict[str, Any]:
    """Write the report of the incident ``execution_arn`` ran, link it, and say what ended how. The incident is read
    from the incident-state table ``state_table`` and the incident-context table ``context_table``. With
    ``memory_ttl_days``, the ended incident is added to its function's history (:mod:`incident_responder.memory`)."""
    from incident_responder.reporting.report import render_html
    from incident_responder.reporting.view import alert_to_end_seconds
    from incident_responder.state.lifecycle import incident_id_of

    incident_id = incident_id_of(execution_arn)
    detail = _settled(clients, state_table, context_table, incident_id, execution_status, wait_seconds)
    if detail is None:
        return {"incident_id": incident_id, "outcome": "no_incident"}
    if detail.get("execution_arn") and detail["execution_arn"] != execution_arn:
        # Not the incident's own execution (a start replayed under another name ends at "Already recorded"):
        # the incident goes on, and its own execution's end will report it.
        return {"incident_id": incident_id, "outcome": "not_the_incidents_execution"}
    key = REPORT_KEY.format(incident_id=incident_id)
    s3 = clients.get("s3")
    s3.put_object(
        Bucket=bucket,
        Key=key,
        Body=render_html(detail).encode(),
        ContentType="text/html; charset=utf-8",
        CacheControl="no-store",
    )
    seconds = max(60, min(int(link_hours * 3600), MAX_LINK_SECONDS))
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=seconds)
    report_uri = f"s3://{bucket}/{key}"
    remembered = _remember(clients, state_table, detail, key, memory_ttl_days) if memory_ttl_days else None
    sent = []
    announce = detail.get("status") not in UNANNOUNCED
    if topic_arn and announce:
        subject, message = report_message(detail, url, seconds / 3600)
        clients.get("sns").publish(TopicArn=topic_arn, Subject=subject, Message=message)
        sent.append("topic")
    if chat_topic_arn and announce:
        from incident_responder.notify.chat import incident_ended

        clients.get("sns").publish(TopicArn=chat_topic_arn, Message=json.dumps(incident_ended(detail, url, report_uri)))
        sent.append("chat")
    return {
        "incident_id": incident_id,
        "outcome": "reported",
        "status": detail.get("status"),
        "report_uri": report_uri,
        "report_url": url,
        "sent": sent,
        "remembered": remembered,
        "duration_seconds": alert_to_end_seconds(detail.get("timings") or {}),
    }
