"""Every stage: the queues and streams that invoke a function (event source mappings) and their SQS settings."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from incident_responder.core.aws import AwsClients


class EventSourceMappingState(BaseModel):
    """A queue or stream that invokes the function (an event source mapping)."""

    uuid: str
    event_source_arn: str
    state: str | None = Field(default=None, description="Enabled, Disabled (or Enabling, Disabling, Updating, ...)")
    batch_size: int | None = None
    queue_visibility_timeout: int | None = Field(
        default=None, description="an SQS source's VisibilityTimeout in seconds (None for other sources)"
    )
    dead_letter_queue_arn: str | None = Field(
        default=None, description="where an SQS source sends what failed maxReceiveCount times (its RedrivePolicy)"
    )


def read_event_source_mappings(clients: AwsClients, function_name: str) -> list[EventSourceMappingState]:
    lam = clients.get("lambda")
    mappings = []
    for page in lam.get_paginator("list_event_source_mappings").paginate(FunctionName=function_name):
        for esm in page["EventSourceMappings"]:
            source = esm.get("EventSourceArn", "")
            mappings.append(
                EventSourceMappingState(
                    uuid=esm["UUID"],
                    event_source_arn=source,
                    state=esm.get("State"),
                    batch_size=esm.get("BatchSize"),
                    **_queue_settings(clients, source),
                )
            )
    return sorted(mappings, key=lambda m: m.uuid)


def queue_url_of(queue_arn: str) -> str:
    """``arn:aws:sqs:REGION:ACCOUNT:NAME`` -> the queue URL SQS takes (the standard endpoint's form)."""
    _, partition, _, region, account, name = queue_arn.split(":", 5)
    suffix = "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com"
    return f"https://sqs.{region}.{suffix}/{account}/{name}"


def read_queue_url(clients: AwsClients, queue_arn: str) -> str:
    """The URL SQS gives the queue of this ARN (an endpoint's own form: the lab's is not AWS's)."""
    _, _, _, _, account, name = queue_arn.split(":", 5)
    return clients.get("sqs").get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]


def _queue_attributes(clients: AwsClients, source_arn: str) -> dict[str, str]:
    if ":sqs:" not in source_arn:
        return {}
    from botocore.exceptions import ClientError

    try:
        return (
            clients.get("sqs")
            .get_queue_attributes(
                QueueUrl=read_queue_url(clients, source_arn), AttributeNames=["VisibilityTimeout", "RedrivePolicy"]
            )
            .get("Attributes", {})
        )
    except ClientError:
        return {}


def _queue_settings(clients: AwsClients, source_arn: str) -> dict[str, Any]:
    """An SQS source's VisibilityTimeout and dead-letter queue (None for other sources, or an unreadable queue)."""
    attributes = _queue_attributes(clients, source_arn)
    try:
        redrive = json.loads(attributes.get("RedrivePolicy") or "{}")
    except ValueError:
        redrive = {}
    visibility = attributes.get("VisibilityTimeout")
    return {
        "queue_visibility_timeout": int(visibility) if visibility is not None else None,
        "dead_letter_queue_arn": redrive.get("deadLetterTargetArn") if isinstance(redrive, dict) else None,
    }


def read_queue_visibility_timeout(clients: AwsClients, source_arn: str) -> int | None:
    """An SQS source's VisibilityTimeout (None for other sources, or a queue that cannot be read)."""
    return _queue_settings(clients, source_arn)["queue_visibility_timeout"]
