"""The lab's person at the approval links: reads the approval request from an inbox, opens the link, decides.

An SQS queue subscribed to the stack's approval topic stands in for the approver's mailbox. The approver
finds the message for its incident, opens the link it chose (GET: the page; a mail scanner's prefetch
would do the same and decide nothing), then presses the page's button (POST with the page's own form),
all through the approval endpoint's function URL, the deployed path. ``replay`` posts the used link again
and records what the endpoint answered (it must refuse).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, Literal

import httpx
from pydantic import BaseModel

from incident_responder.core.aws import AwsClients

INBOX_QUEUE = "lab-approval-inbox"
_LINK = re.compile(r"^(Approve|Reject):\s+(\S+)$", re.M)
_HIDDEN = re.compile(r'<input type=hidden name="(\w+)" value="([^"]*)">')


class ApproverReport(BaseModel):
    """What the lab's approver did, for the incident record."""

    decision: Literal["approve", "reject", "none"]
    page_status: int | None = None
    decision_status: int | None = None
    replay_status: int | None = None
    message_subject: str | None = None


def create_inbox(clients: AwsClients, topic_arn: str) -> str:
    """The approver's mailbox: a queue subscribed to the approval topic (raw delivery). Returns its URL."""
    sqs = clients.get("sqs")
    url = sqs.create_queue(QueueName=INBOX_QUEUE)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    clients.get("sns").subscribe(
        TopicArn=topic_arn, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "false"}
    )
    return url


def read_request(clients: AwsClients, inbox_url: str, incident_id: str, timeout: float = 20) -> dict[str, Any]:
    """The approval request for ``incident_id`` (subject, message, links); other incidents' stay queued."""
    sqs = clients.get("sqs")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = sqs.receive_message(QueueUrl=inbox_url, MaxNumberOfMessages=10, WaitTimeSeconds=0, VisibilityTimeout=0)
        for message in got.get("Messages", []):
            envelope = json.loads(message["Body"])
            text = envelope.get("Message", "")
            if f"Incident {incident_id} " not in text:
                continue
            sqs.delete_message(QueueUrl=inbox_url, ReceiptHandle=message["ReceiptHandle"])
            links = {kind.lower(): url for kind, url in _LINK.findall(text)}
            return {"subject": envelope.get("Subject"), "message": text, "links": links}
        time.sleep(0.05)
    raise TimeoutError(f"no approval request for {incident_id} reached the lab's inbox in {timeout:.0f} s")


def act(
    clients: AwsClients,
    inbox_url: str,
    incident_id: str,
    decision: Literal["approve", "reject", "none"],
    *,
    replay: bool = False,
    reason: str = "rejected in the lab",
) -> ApproverReport:
    """Read the request and do what ``decision`` says through the approval page."""
    request = read_request(clients, inbox_url, incident_id)
    report = ApproverReport(decision=decision, message_subject=request["subject"])
    if decision == "none":
        return report
    url = request["links"][decision]
    with httpx.Client(timeout=30, headers={"user-agent": "lab-approver/1.0"}) as http:
        page = http.get(url)
        report.page_status = page.status_code
        form = dict(_HIDDEN.findall(page.text))
        if decision == "reject":
            form["reason"] = reason
        report.decision_status = http.post(url, data=form).status_code
        if replay:
            report.replay_status = http.post(url, data=form).status_code
    return report
