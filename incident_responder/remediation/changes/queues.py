"""REMEDIATING and ROLLING_BACK: the visibility timeout of a queue the function reads set."""

from __future__ import annotations

from typing import Any

from incident_responder.account.event_sources import read_queue_url
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import RestoreQueueAttributesParams
from incident_responder.remediation.changes.base import _Change


class _QueueVisibility(_Change):
    """SetQueueAttributes VisibilityTimeout on the queue a mapping of the function reads."""

    _url = staticmethod(read_queue_url)

    def resources(self, p: RestoreQueueAttributesParams) -> list[str]:
        return [f"queue:{p.queue_arn}"]

    def satisfied(self, p: RestoreQueueAttributesParams, state: dict[str, Any]) -> bool:
        return bool(state["visibility_timeout"] == p.visibility_timeout)

    def capture(self, clients: AwsClients, p: RestoreQueueAttributesParams) -> dict[str, Any]:
        sqs = clients.get("sqs")
        attributes = sqs.get_queue_attributes(
            QueueUrl=self._url(clients, p.queue_arn), AttributeNames=["VisibilityTimeout"]
        )["Attributes"]
        return {"queue_arn": p.queue_arn, "visibility_timeout": int(attributes["VisibilityTimeout"])}

    def apply(self, clients: AwsClients, p: RestoreQueueAttributesParams) -> str:
        return self._set(clients, p, p.visibility_timeout)

    def restore(self, clients: AwsClients, p: RestoreQueueAttributesParams, prior: dict[str, Any]) -> None:
        self._set(clients, p, prior["visibility_timeout"])

    def _set(self, clients: AwsClients, p: RestoreQueueAttributesParams, seconds: int) -> str:
        if self.capture(clients, p)["visibility_timeout"] == seconds:
            return f"the visibility timeout of {p.queue_arn} is already {seconds} s"
        clients.get("sqs").set_queue_attributes(
            QueueUrl=self._url(clients, p.queue_arn), Attributes={"VisibilityTimeout": str(seconds)}
        )
        return f"set the visibility timeout of {p.queue_arn} to {seconds} s"
