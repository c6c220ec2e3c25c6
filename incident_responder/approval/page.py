"""AWAITING_APPROVAL: the approval page, where whoever holds a link sees the actions and decides.

The approval page (:func:`handle_http`): GET only shows what would be decided (mail scanners
prefetch links, so a GET never decides); the page's button POSTs, and the POST decides.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from incident_responder.approval.decision import check_decision, check_link, decide
from incident_responder.approval.errors import ApprovalError, MalformedApprovalRequestError
from incident_responder.approval.record import _INCIDENT_ID, DIGEST_PATTERN, ApprovalRecord, load_approval_record
from incident_responder.approval.tokens import decode_token
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import ApprovalDecision

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
            f"<div class=meta>The proposer model's reasoning (a quote): {e(action.get('reasoning'))}</div>"
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


def _handover(record: ApprovalRecord) -> str:
    """The hand-over steps for what no action fixes: shown for context, not part of the decision."""
    if not record.handover:
        return ""
    items = "".join(
        f"<li>{e(s.get('text'))} <span class=meta>({e(s.get('fault_type'))}"
        + (f"; follows <code>{e(s['runbook'])}</code>" if s.get("runbook") else "")
        + ")</span></li>"
        for s in record.handover
        if isinstance(s, dict)
    )
    return (
        "<h2>For a person (no action fixes these)</h2><p class=meta>The proposer's words; a runbook guides them and "
        f"never authorises anything. Not part of this decision.</p><ol>{items}</ol>"
    )


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
    if record.history:  # seen before: what the function's past incidents say of these actions
        summary += (
            "<h2>Seen before</h2><ul>" + "".join(f"<li>{e(h)}</li>" for h in record.history) + "</ul>"
            "<p class=meta>From the responder's records of this function's earlier incidents; a fix rolled back "
            "last time, or a fault back soon after a verified fix, is why a person decides.</p>"
        )
    content = (
        f"<h1>{verb} {count} remediation action{'s' * (count != 1)} for <code>{e(record.function_name)}</code>"
        f"{f' in {e(record.where)}' if record.where else ''}?</h1>"
        f"<p class=meta>Incident <code>{e(record.incident_id)}</code> &middot; overall risk "
        f'<span class="risk-{e(record.risk)}">{e(record.risk)}</span> &middot; expires at '
        f"<time>{e(record.approval_expires_at)}</time></p>"
        "<p class=notice>Nothing has been decided yet. Opening this page changes nothing; the button below does. "
        "Your decision covers exactly the actions listed here, identified by their digest.</p>"
        f"{summary}<h2>Actions, in the order they would run</h2>{_action_cards(record)}{_handover(record)}"
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
        f"<p>Incident <code>{e(record.incident_id)}</code>, function <code>{e(record.function_name)}</code>"
        f"{f' in {e(record.where)}' if record.where else ''}: "
        f"{len(record.actions)} action(s), digest <code class=digest>{e(decision.actions_digest)}</code>.</p>"
        f"<p class=meta>Recorded as decided by {e(decision.decided_by)} at {e(decision.decided_at)}.</p>{reason}</div>"
    )
    return _page(verb, content)


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
            record = check_decision(
                load_approval_record(clients, table, link["incident"]), link["incident"], link["digest"], token, now
            )
            check_link(record, link["decision"], link["key"])
            return HttpResponse(200, render_review_page(record, link))
        result = decide(
            clients,
            table=table,
            incident_id=link["incident"],
            digest=link["digest"],
            token=token,
            decision=link["decision"],  # type: ignore[arg-type]  # _link_params admits only approve or reject
            decided_by=decided_by,
            channel="link",
            reason=params.get("reason"),
            link_key=link["key"],
            now=now,
        )
        decided = load_approval_record(clients, table, link["incident"])
        assert decided is not None
        return HttpResponse(200, render_result_page(result, decided))
    except ApprovalError as exc:
        return HttpResponse(exc.status, render_refusal_page(exc))
