"""INVESTIGATING: get_dependencies' queues, the function's event source mappings and the other queues it uses."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError
from pydantic import Field

from incident_responder.account.compact import Compact
from incident_responder.account.errors import AWS_ERRORS, describe_error
from incident_responder.account.event_sources import read_queue_url
from incident_responder.account.readings import _code
from incident_responder.core.aws import AwsClients

MAX_MAPPINGS = 10
MAX_QUEUES = 10
VISIBILITY_TIMEOUT_FACTOR = 6  # Lambda's guidance for an SQS event source: at least six times the function timeout

QUEUE_ARN_RE = re.compile(r"^arn:aws[a-zA-Z-]*:sqs:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,80}(\.fifo)?$")
# https://sqs.REGION.amazonaws.com/ACCOUNT/NAME (and the older and local endpoints' hosts): the path's shape.
QUEUE_URL_RE = re.compile(r"^https?://[A-Za-z0-9.:-]+/(\d{12})/([A-Za-z0-9_-]{1,80}(?:\.fifo)?)$")
_MISSING_QUEUE = ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")


class QueueState(Compact):
    visibility_timeout: int | None = Field(default=None, description="VisibilityTimeout in seconds")
    messages_visible: int | None = Field(default=None, description="ApproximateNumberOfMessages")
    messages_in_flight: int | None = Field(default=None, description="ApproximateNumberOfMessagesNotVisible")
    oldest_message_age_seconds: float | None = Field(
        default=None,
        description="AWS/SQS ApproximateAgeOfOldestMessage, latest point of the last 15 minutes (unset: none)",
    )
    dead_letter_queue_arn: str | None = Field(default=None, description="RedrivePolicy.deadLetterTargetArn")
    max_receive_count: int | None = Field(default=None, description="RedrivePolicy.maxReceiveCount")
    exists: bool = Field(default=True, description="false: the queue does not exist (left out: it does)")


class MappingDependency(Compact):
    uuid: str
    event_source_arn: str | None = None
    state: str | None = Field(default=None, description="Enabled, Disabled, Enabling, Disabling, Updating, ...")
    last_processing_result: str | None = None
    batch_size: int | None = None
    maximum_batching_window_seconds: int | None = None
    queue: QueueState | None = Field(default=None, description="SQS sources: the queue read")
    visibility_timeout_below_six_times_function_timeout: bool | None = Field(
        default=None,
        description="SQS sources: true when the queue's visibility timeout is under six times the function's "
        "timeout (Lambda's guidance), so messages reappear while a batch is still being processed",
    )


class QueueDependency(Compact):
    queue_arn: str
    used_as: str = Field(
        description="dead_letter_queue | destination_on_failure | destination_on_success | named_in_environment"
    )
    variable: str | None = Field(default=None, description="named_in_environment: the variable naming it")
    messages_visible: int | None = None
    oldest_message_age_seconds: float | None = None
    is_event_source: bool = Field(default=False, description="one of the function's own mappings reads it")
    exists: bool = Field(default=True, description="false: the queue does not exist (left out: it does)")


def _queue_arn_of_url(url: str, region: str) -> str | None:
    """The ARN of a queue URL (the region from the host where it names one: sqs.REGION.amazonaws.com)."""
    m = QUEUE_URL_RE.match(url)
    if not m:
        return None
    host = url.split("/")[2]
    named = re.match(r"^(?:sqs\.)?([a-z]{2}(?:-gov)?-[a-z]+-\d)\.", host)
    partition = "aws-cn" if host.endswith(".cn") else "aws"
    return f"arn:{partition}:sqs:{named.group(1) if named else region}:{m.group(1)}:{m.group(2)}"


class _Reader:
    """One get_dependencies run: its clients, the function's timeout and the gaps it met."""

    def __init__(self, clients: AwsClients, gaps: list[str]):
        self.clients = clients
        self.gaps = gaps
        self._queues: dict[str, QueueState] = {}

    def attempt(self, what: str, read: Callable[[], Any], default: Any = None) -> Any:
        try:
            return read()
        except AWS_ERRORS as exc:
            self.gaps.append(f"{what}: {describe_error(exc)}")
            return default

    def queue(self, arn: str) -> QueueState:
        """A queue's attributes, read once per run."""
        if arn in self._queues:
            return self._queues[arn]
        sqs = self.clients.get("sqs")
        state = QueueState()
        try:
            attributes = sqs.get_queue_attributes(
                QueueUrl=read_queue_url(self.clients, arn),
                AttributeNames=[
                    "VisibilityTimeout",
                    "ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible",
                    "RedrivePolicy",
                ],
            ).get("Attributes", {})
        except AWS_ERRORS as exc:
            if _code(exc) in _MISSING_QUEUE:
                state.exists = False
            else:
                self.gaps.append(f"queue {arn}: {describe_error(exc)}")
            self._queues[arn] = state
            return state

        def integer(key: str) -> int | None:
            value = attributes.get(key)
            return int(value) if value is not None and str(value).lstrip("-").isdigit() else None

        state.visibility_timeout = integer("VisibilityTimeout")
        state.messages_visible = integer("ApproximateNumberOfMessages")
        state.messages_in_flight = integer("ApproximateNumberOfMessagesNotVisible")
        try:
            redrive = json.loads(attributes.get("RedrivePolicy") or "{}")
        except ValueError:
            redrive = {}
        if isinstance(redrive, dict):
            state.dead_letter_queue_arn = redrive.get("deadLetterTargetArn")
            count = str(redrive.get("maxReceiveCount"))
            state.max_receive_count = int(count) if count.isdigit() else None
        self._queues[arn] = state
        return state


def _mappings(reader: _Reader, name: str, timeout: int | None) -> list[MappingDependency]:
    lam = reader.clients.get("lambda")
    raw: list[dict[str, Any]] = []

    def listed() -> None:
        kwargs: dict[str, Any] = {"FunctionName": name}
        while len(raw) <= MAX_MAPPINGS:
            page = lam.list_event_source_mappings(**kwargs)
            raw.extend(page.get("EventSourceMappings", []))
            if not (marker := page.get("NextMarker")):
                return
            kwargs["Marker"] = marker

    reader.attempt("event source mappings", listed)
    if len(raw) > MAX_MAPPINGS:
        reader.gaps.append(f"event source mappings: only the first {MAX_MAPPINGS} shown")
    out = []
    for m in sorted(raw, key=lambda m: m["UUID"])[:MAX_MAPPINGS]:
        source = m.get("EventSourceArn")
        mapping = MappingDependency(
            uuid=m["UUID"],
            event_source_arn=source,
            state=m.get("State"),
            last_processing_result=m.get("LastProcessingResult"),
            batch_size=m.get("BatchSize"),
            maximum_batching_window_seconds=m.get("MaximumBatchingWindowInSeconds"),
        )
        if source and QUEUE_ARN_RE.match(source):
            mapping.queue = reader.queue(source)
            visibility = mapping.queue.visibility_timeout
            if visibility is not None and timeout:
                mapping.visibility_timeout_below_six_times_function_timeout = (
                    visibility < VISIBILITY_TIMEOUT_FACTOR * timeout
                )
        out.append(mapping)
    return out


def _other_queues(
    reader: _Reader,
    name: str,
    config: dict[str, Any],
    variables: dict[str, str],
    sources: set[str],
    region: str,
) -> list[QueueDependency]:
    named: list[tuple[str, str, str | None]] = []  # (arn, used_as, variable)
    dlq = (config.get("DeadLetterConfig") or {}).get("TargetArn")
    if dlq and QUEUE_ARN_RE.match(dlq):
        named.append((dlq, "dead_letter_queue", None))

    def destinations() -> dict[str, Any]:
        try:
            return reader.clients.get("lambda").get_function_event_invoke_config(FunctionName=name)
        except ClientError as exc:
            if _code(exc) == "ResourceNotFoundException":  # no asynchronous invocation configuration
                return {}
            raise

    invoke_config = reader.attempt("asynchronous destinations", destinations, {}) or {}
    for outcome, used_as in (("OnFailure", "destination_on_failure"), ("OnSuccess", "destination_on_success")):
        target = ((invoke_config.get("DestinationConfig") or {}).get(outcome) or {}).get("Destination")
        if target and QUEUE_ARN_RE.match(target):
            named.append((target, used_as, None))
    for variable, value in sorted(variables.items()):
        arn = value if QUEUE_ARN_RE.match(value or "") else _queue_arn_of_url(value or "", region)
        if arn:
            named.append((arn, "named_in_environment", variable))
    named = list(dict.fromkeys(named))
    if len(named) > MAX_QUEUES:
        reader.gaps.append(f"queues: only the first {MAX_QUEUES} of {len(named)} shown")
    out = []
    for arn, used_as, named_by in named[:MAX_QUEUES]:
        state = reader.queue(arn)
        out.append(
            QueueDependency(
                queue_arn=arn,
                used_as=used_as,
                variable=named_by,
                messages_visible=state.messages_visible,
                is_event_source=arn in sources,
                exists=state.exists,
            )
        )
    return out
