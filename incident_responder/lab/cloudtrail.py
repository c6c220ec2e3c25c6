"""SERVING the lab's trail: the management events CloudTrail would record, answered as LookupEvents does."""

from __future__ import annotations

import itertools
import json
import threading
import time
import uuid
from collections import deque
from datetime import UTC, datetime
from typing import Any

from incident_responder.lab.api_calls import _Call
from incident_responder.lab.environment import LAB_REGION
from incident_responder.lab.errors import TrailLookupError
from incident_responder.lab.management_events import (
    _API_VERSION_PATH,
    _LAMBDA_V2,
    _RESOURCE_PARAMETERS,
    _SERVICE_NAME_PARAMETERS,
    _account_of,
    _identity,
    _queue_arn,
)

TRAIL_CAPACITY = 5000  # the newest events kept (a management write is a few hundred bytes)


class CloudTrailRecorder:
    """The lab's CloudTrail: the management write events of the calls that reached moto (and succeeded), newest
    last, bounded to ``capacity``; :meth:`lookup` answers as LookupEvents does. Tests record events directly with
    :meth:`record`."""

    def __init__(self, capacity: int = TRAIL_CAPACITY):
        self._events: deque[tuple[int, float, dict[str, Any], tuple[Any, ...]]] = deque(maxlen=capacity)
        self._sequence = itertools.count(1)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._events)

    def clear(self) -> None:
        with self._lock:
            self._events.clear()

    @property
    def capacity(self) -> int:
        return self._events.maxlen or 0

    def resize(self, capacity: int) -> None:
        """Keep at most ``capacity`` events from now on (the newest, when there are more)."""
        with self._lock:
            self._events = deque(self._events, maxlen=capacity)

    def record(
        self,
        event_name: str,
        event_source: str,
        resources: list[tuple[str, str]] | None = None,
        *,
        access_key_id: str = "testing",
        event_time: datetime | float | None = None,
        region: str = LAB_REGION,
        account: str | None = None,
        request_parameters: dict[str, Any] | None = None,
        error: tuple[str, str] | None = None,
    ) -> str:
        """Record one management event: ``resources`` as (ResourceType, ResourceName) pairs; ``error`` (code, message)
        for a call that failed, as CloudTrail records it (errorCode, errorMessage). Returns its EventId.
        (Its CloudTrailEvent JSON is written when a lookup returns it: recording stays a few microseconds.)"""
        account = account or _account_of(access_key_id)
        when = event_time.timestamp() if isinstance(event_time, datetime) else event_time or time.time()
        identity, username = _identity(access_key_id, account)
        event_id = str(uuid.uuid4())
        event = {
            "EventId": event_id,
            "EventName": event_name,
            "ReadOnly": "false",
            "AccessKeyId": access_key_id,
            "EventTime": when,
            "EventSource": event_source,
            "Username": username,
            "Resources": [{"ResourceType": kind, "ResourceName": name} for kind, name in resources or []],
        }
        detail = (identity, region, account, request_parameters or None, error)
        with self._lock:
            self._events.append((next(self._sequence), when, event, detail))
        return event_id

    @staticmethod
    def _cloudtrail_event(event: dict[str, Any], detail: tuple[Any, ...]) -> str:
        """The event's CloudTrailEvent: the record CloudTrail delivers, as LookupEvents returns it (JSON text)."""
        identity, region, account, request_parameters, error = detail
        failed = {"errorCode": error[0], "errorMessage": error[1]} if error else {}
        return json.dumps(
            {
                "eventVersion": "1.09",
                "userIdentity": identity,
                "eventTime": datetime.fromtimestamp(event["EventTime"], UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "eventSource": event["EventSource"],
                "eventName": event["EventName"],
                "awsRegion": region,
                "sourceIPAddress": "127.0.0.1",
                "userAgent": "lab",
                "requestParameters": request_parameters,
                "responseElements": None,
                "requestID": event["EventId"],
                "eventID": event["EventId"],
                "readOnly": False,
                "eventType": "AwsApiCall",
                "managementEvent": True,
                "recipientAccountId": account,
                "eventCategory": "Management",
                **failed,
            },
            separators=(",", ":"),
        )

    def record_call(
        self, call: _Call, request: bytes, response: bytes, *, path: str = "", error: tuple[str, str] | None = None
    ) -> str | None:
        """The event for a call moto answered (``request`` / ``response``: the JSON bodies, when there are), or that
        failed with ``error`` (code, message) before it did."""
        if call.operation is None:
            return None
        account = _account_of(call.access_key_id)
        params: dict[str, Any] = dict(call.path_params or {})
        params.update(call.form or {})
        if request[:1] == b"{":
            loaded = json.loads(request)
            params.update(loaded if isinstance(loaded, dict) else {})
        answered: dict[str, Any] = {}
        if response[:1] == b"{" and error is None:
            loaded = json.loads(response)
            answered = loaded if isinstance(loaded, dict) else {}
        resources = self._resources(call, params, answered, account)
        name = call.operation
        if call.service == "lambda" and (version := _API_VERSION_PATH.match(path)):
            name += "".join(version.groups()) + ("v2" if name in _LAMBDA_V2 else "")
        identifiers = {k: v for k, v in params.items() if k in _RESOURCE_PARAMETERS and isinstance(v, str)}
        return self.record(
            name,
            f"{call.service}.amazonaws.com",
            resources,
            access_key_id=call.access_key_id,
            region=call.region,
            account=account,
            request_parameters=identifiers,
            error=error,
        )

    @staticmethod
    def _resources(
        call: _Call, params: dict[str, Any], answered: dict[str, Any], account: str
    ) -> list[tuple[str, str]]:
        region = call.region
        found: list[tuple[str, str]] = []

        def add(kind: str, name: str | None) -> None:
            if name and (kind, name) not in found:
                found.append((kind, name))

        metadata = answered.get("KeyMetadata")
        if isinstance(metadata, dict):
            add("AWS::KMS::Key", metadata.get("Arn"))
        if call.service == "secretsmanager" and isinstance(answered.get("ARN"), str):
            add("AWS::SecretsManager::Secret", answered["ARN"])
        if call.service in _SERVICE_NAME_PARAMETERS and isinstance(params.get("Name"), str):
            kind, name = _SERVICE_NAME_PARAMETERS[call.service], params["Name"]
            if call.service == "ssm" and not name.startswith("arn:"):
                name = f"arn:aws:ssm:{region}:{account}:parameter/{name.lstrip('/')}"
            if call.service != "secretsmanager" or not any(k == kind for k, _ in found):
                add(kind, name)
        for source in (params, answered):
            for key, kind in _RESOURCE_PARAMETERS.items():
                value = source.get(key)
                if not isinstance(value, str) or not value:
                    continue
                if key == "FunctionName" and ":function:" in value:
                    value = value.split(":function:", 1)[1].split(":", 1)[0]
                elif key == "KeyId" and not value.startswith(("arn:", "alias/")):
                    value = f"arn:aws:kms:{region}:{account}:key/{value}"
                elif key == "SecretId" and any(k == kind for k, _ in found):
                    continue  # the response's ARN names it already
                elif key == "TableName" and not value.startswith("arn:"):
                    value = f"arn:aws:dynamodb:{region}:{account}:table/{value}"
                elif key == "QueueUrl":
                    add(kind, value)
                    value = _queue_arn(value, region, account) or ""
                add(kind, value)
        return found

    def lookup_request(self, request: dict[str, Any]) -> dict[str, Any]:
        """A LookupEvents request (its JSON body) answered as CloudTrail does."""
        attributes = request.get("LookupAttributes") or []
        if len(attributes) > 1:
            raise TrailLookupError(
                "InvalidLookupAttributesException", "You cannot specify more than one lookup attribute."
            )
        max_results = request.get("MaxResults", 50)
        if not isinstance(max_results, int) or not 1 <= max_results <= 50:
            raise TrailLookupError("InvalidMaxResultsException", "MaxResults must be between 1 and 50.")
        token = request.get("NextToken")
        if token is not None and not str(token).isdigit():
            raise TrailLookupError("InvalidNextTokenException", "Invalid NextToken.")
        return self.lookup(
            {a.get("AttributeKey"): a.get("AttributeValue") for a in attributes},
            start=_epoch(request.get("StartTime")),
            end=_epoch(request.get("EndTime")),
            max_results=max_results,
            next_token=int(token) if token is not None else None,
        )

    def lookup(
        self,
        attributes: dict[str, str] | None = None,
        *,
        start: float | None = None,
        end: float | None = None,
        max_results: int = 50,
        next_token: int | None = None,
    ) -> dict[str, Any]:
        """Events matching every attribute (ResourceName, ResourceType, EventName, EventSource, EventId, Username,
        AccessKeyId, ReadOnly) between ``start`` and ``end`` (epoch seconds), newest first, a page at a time."""
        attributes = attributes or {}
        with self._lock:
            events = list(self._events)
        page: list[dict[str, Any]] = []
        last, more = 0, None
        for sequence, when, event, detail in reversed(events):
            if next_token is not None and sequence >= next_token:
                continue
            if (start is not None and when < start) or (end is not None and when > end):
                continue
            if not all(_matches(event, key, value) for key, value in attributes.items()):
                continue
            if len(page) == max_results:
                more = str(last)
                break
            page.append({**event, "CloudTrailEvent": self._cloudtrail_event(event, detail)})
            last = sequence
        answer: dict[str, Any] = {"Events": page}
        if more:
            answer["NextToken"] = more
        return answer


def _matches(event: dict[str, Any], key: str, value: str) -> bool:
    if key == "ResourceName":
        return any(r["ResourceName"] == value for r in event["Resources"])
    if key == "ResourceType":
        return any(r["ResourceType"] == value for r in event["Resources"])
    if key in ("EventName", "EventSource", "EventId", "Username", "AccessKeyId", "ReadOnly"):
        return str(event.get(key)) == value
    raise TrailLookupError("InvalidLookupAttributesException", f"Unknown lookup attribute key: {key}")


def _epoch(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise TrailLookupError("InvalidTimeRangeException", f"not a time: {value!r}") from exc
