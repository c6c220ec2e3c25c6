"""SERVING the lab: the failure seam, WSGI middleware around moto that makes chosen API calls fail.

It also hands each management write that reached moto to the lab's trail (cloudtrail.py), and answers
LookupEvents from it.
"""

from __future__ import annotations

import io
import json
import logging
import re
import threading
import uuid
from collections import Counter
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, unquote

from incident_responder.lab.api_calls import _CREDENTIAL_SCOPE, _RPC_V2_PATH, _Call, _Route
from incident_responder.lab.cloudtrail import CloudTrailRecorder
from incident_responder.lab.environment import LAB_REGION
from incident_responder.lab.errors import TrailLookupError
from incident_responder.lab.management_events import is_management_write


# -- the failure seam: make chosen API calls fail ----------------------------------------------------
@dataclass
class _Failure:
    action: str
    service: str | None
    times: int
    code: str
    status: int
    message: str


# The largest request Lambda takes for these operations (a .zip file uploaded directly, base64-encoded in the JSON
# body: about 50 MB): a larger one is refused before Lambda handles it, in the service's words.
LAMBDA_REQUEST_LIMIT = 70167211
_SIZE_LIMITED = ("CreateFunction", "UpdateFunctionCode")


def _quota_refusal(call: _Call, environ: dict[str, Any]) -> _Failure | None:
    """What Lambda answers a request larger than it takes (RequestEntityTooLargeException, HTTP 413)."""
    if call.service != "lambda" or call.operation not in _SIZE_LIMITED:
        return None
    if int(environ.get("CONTENT_LENGTH") or 0) <= LAMBDA_REQUEST_LIMIT:
        return None
    message = f"Request must be smaller than {LAMBDA_REQUEST_LIMIT} bytes for the {call.operation} operation"
    return _Failure(call.operation, "lambda", 1, "RequestEntityTooLargeException", 413, message)


class RequestFailures:
    """WSGI middleware around moto's app: answers matching requests with an AWS error, records the management
    events CloudTrail would (``trail``) and answers LookupEvents from them, and passes everything else to moto."""

    def __init__(self, app: Any, trail: CloudTrailRecorder | None = None):
        self.app = app
        self.trail = trail
        self.failed: list[str] = []
        self._pending: list[_Failure] = []
        self._lock = threading.Lock()
        self._rest_routes: dict[str, list[_Route]] = {}
        self._protocols: dict[str, str] = {}
        # Counting (the bench): every request by (access key, service, operation); None: not counted (each GET's
        # REST route is then never looked up).
        self.calls: Counter[tuple[str, str, str]] | None = None

    def add(self, failure: _Failure) -> None:
        if failure.times < 1:
            raise ValueError("times must be 1 or more")
        with self._lock:
            self._pending.append(failure)

    def clear(self) -> None:
        with self._lock:
            self._pending.clear()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if path.startswith("/moto-api/"):
            if path.startswith("/moto-api/reset") and self.trail is not None:
                self.trail.clear()  # a fresh account has no history
            return self.app(environ, start_response)
        if not self._pending and self.trail is None:
            return self.app(environ, start_response)
        # A GET is never a write: its REST route is looked up only for a pending failure (or to count it).
        counting = self.calls is not None
        call = self._identify(environ, routes=counting or bool(self._pending) or environ.get("REQUEST_METHOD") != "GET")
        if counting:
            with self._lock:
                self.calls[(call.access_key_id, call.service, call.operation or "?")] += 1  # type: ignore[index]
        failure = self._take_failure(call) if self._pending else None
        if failure is None and (failure := _quota_refusal(call, environ)) is not None:
            _drain(environ)  # the whole request is read before it is answered, as a server does
        if failure is not None:
            if self.trail is not None and call.operation and is_management_write(call.service, call.operation):
                # CloudTrail records a failed call too, with its errorCode (nothing changed).
                error = (failure.code, failure.message)
                self.trail.record_call(call, b"", b"", path=environ.get("PATH_INFO", ""), error=error)
            return self._fail(environ, start_response, call.service, failure)
        if self.trail is not None and call.operation:
            if call.service == "cloudtrail" and call.operation == "LookupEvents":
                return self._lookup_events(environ, start_response)
            if is_management_write(call.service, call.operation):
                return self._recorded(call, environ, start_response)
        return self.app(environ, start_response)

    def _take_failure(self, call: _Call) -> _Failure | None:
        with self._lock:
            failure = next(
                (
                    f
                    for f in self._pending
                    if f.action == call.operation and (f.service is None or f.service == call.service) and f.times > 0
                ),
                None,
            )
            if failure is not None:
                failure.times -= 1
                if failure.times == 0:
                    self._pending.remove(failure)
                self.failed.append(f"{call.service}:{call.operation}")
        return failure

    def _fail(self, environ: dict[str, Any], start_response: Any, service: str, failure: _Failure) -> Any:
        body, content_type = self._error_body(environ, service, failure)
        start_response(
            f"{failure.status} {HTTPStatus(failure.status).phrase}",
            [
                ("Content-Type", content_type),
                ("Content-Length", str(len(body))),
                ("x-amzn-ErrorType", failure.code),
                ("x-amzn-RequestId", str(uuid.uuid4())),
            ],
        )
        return [body]

    def _identify(self, environ: dict[str, Any], *, routes: bool = True) -> _Call:
        """Who signed a request, for which service, and which operation it is: from its target header, its Action,
        CloudWatch's RPC path or (``routes``) its REST route."""
        match = _CREDENTIAL_SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
        key, region, service = match.groups() if match else ("", LAB_REGION, "")
        call = _Call(service=service, operation=None, region=region, access_key_id=key)
        target = environ.get("HTTP_X_AMZ_TARGET")
        if target:
            call.kind, call.operation = "target", target.rsplit(".", 1)[-1]
            return call
        query_string = environ.get("QUERY_STRING", "")
        action = parse_qs(query_string).get("Action") if "Action=" in query_string else None
        if action:
            call.form = {k: v[0] for k, v in parse_qs(query_string).items()}
        elif "x-www-form-urlencoded" in environ.get("CONTENT_TYPE", ""):
            # Read the form once and hand moto an identical stream.
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(body)
            call.form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
            action = [call.form["Action"]] if "Action" in call.form else None
        if action:
            call.kind, call.operation = "query", action[0]
            return call
        path = environ.get("PATH_INFO", "")
        if rpc := _RPC_V2_PATH.match(path):
            call.kind, call.operation = "cbor", rpc.group(1)
            return call
        if not routes:
            return call
        method = environ.get("REQUEST_METHOD", "")
        query = parse_qs(query_string, keep_blank_values=True)
        for route in self._routes(service):
            if route.method == method and (found := route.path.fullmatch(path)) and route.matches(query, environ):
                call.operation = route.name
                call.path_params = {k: unquote(v) for k, v in found.groupdict().items()}
                return call
        return call

    def _recorded(self, call: _Call, environ: dict[str, Any], start_response: Any) -> Any:
        """Pass the call to moto and record its management event (the trail never fails it)."""
        request = b""
        if call.kind == "target" or (call.kind == "rest" and "json" in environ.get("CONTENT_TYPE", "")):
            request = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(request)
        status: list[int] = []
        answered: dict[str, str] = {}

        def capture(line: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            status.append(int(line.split(" ", 1)[0]))
            answered.update((k.lower(), v) for k, v in headers)
            return start_response(line, headers, exc_info) if exc_info else start_response(line, headers)

        result = self.app(environ, capture)
        try:
            body = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()
        if status:
            try:
                assert self.trail is not None
                # A call that failed is recorded too, with its errorCode and errorMessage, as CloudTrail does.
                failed = error_of(body, status[0], answered.get("x-amzn-errortype")) if status[0] >= 400 else None
                self.trail.record_call(call, request, body, path=environ.get("PATH_INFO", ""), error=failed)
            except Exception:  # noqa: BLE001 - the trail is the lab's bookkeeping: it never fails a request
                logging.getLogger(__name__).debug("not recorded: %s", call.operation, exc_info=True)
        return [body]

    def _lookup_events(self, environ: dict[str, Any], start_response: Any) -> Any:
        assert self.trail is not None
        raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        try:
            status, answer = 200, self.trail.lookup_request(json.loads(raw or b"{}"))
        except TrailLookupError as exc:
            status, answer = 400, {"__type": exc.code, "message": str(exc), "Message": str(exc)}
        body = json.dumps(answer).encode()
        start_response(
            f"{status} {HTTPStatus(status).phrase}",
            [
                ("Content-Type", "application/x-amz-json-1.1"),
                ("Content-Length", str(len(body))),
                ("x-amzn-RequestId", str(uuid.uuid4())),
            ],
        )
        return [body]

    def _routes(self, service: str) -> list[_Route]:
        """The REST routes of ``service`` from botocore's model, most specific first."""
        if service not in self._rest_routes:
            routes = []
            try:
                import botocore.session

                model = botocore.session.get_session().get_service_model(service)
                self._protocols[service] = model.metadata.get("protocol", "")
                routes = [_Route.of(model.operation_model(name)) for name in model.operation_names]
            except Exception:  # an unknown signing name simply has no REST routes
                routes = []
            # Operations sharing a path (S3's PUT /{Bucket}/{Key+}: PutObject, CopyObject, UploadPart ...) differ by
            # the query keys and headers they require: the one requiring most is tried first, greedy {Key+} paths last.
            routes.sort(key=lambda r: (-len(r.query) - len(r.headers), r.path.pattern.count(".+")))
            self._rest_routes[service] = routes
        return self._rest_routes[service]

    def _error_body(self, environ: dict[str, Any], service: str, failure: _Failure) -> tuple[bytes, str]:
        request_id = str(uuid.uuid4())
        if environ.get("HTTP_X_AMZ_TARGET") or self._protocols.get(service) == "rest-json":
            body = {"__type": failure.code, "message": failure.message, "Message": failure.message}
            return json.dumps(body).encode(), "application/x-amz-json-1.1"
        code, message = _xml_escape(failure.code), _xml_escape(failure.message)
        if service == "ec2":
            xml = (
                f"<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message></Error></Errors>"
                f"<RequestID>{request_id}</RequestID></Response>"
            )
        elif self._protocols.get(service) == "rest-xml":
            xml = f"<Error><Code>{code}</Code><Message>{message}</Message><RequestId>{request_id}</RequestId></Error>"
        else:
            xml = (
                f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error>"
                f"<RequestId>{request_id}</RequestId></ErrorResponse>"
            )
        return f'<?xml version="1.0" encoding="UTF-8"?>{xml}'.encode(), "text/xml"


def _drain(environ: dict[str, Any]) -> None:
    remaining = int(environ.get("CONTENT_LENGTH") or 0)
    while remaining > 0 and (chunk := environ["wsgi.input"].read(min(remaining, 1 << 20))):
        remaining -= len(chunk)


def _xml_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_XML_ERROR = re.compile(r"<Code>(?P<code>[^<]+)</Code>(?:.*?<Message>(?P<message>[^<]*)</Message>)?", re.S)


def error_of(body: bytes, status: int, error_type: str | None = None) -> tuple[str, str]:
    """(errorCode, errorMessage) of a failed call's answer: its ``x-amzn-ErrorType`` header or a JSON body's
    ``__type``, and its ``message``; or an XML body's ``Code`` and ``Message``; the HTTP status when none is named."""
    text = body.decode("utf-8", "replace")
    header_code = (error_type or "").split(":", 1)[0]
    if text[:1] == "{":
        try:
            loaded = json.loads(text)
        except ValueError:
            loaded = {}
        if isinstance(loaded, dict):
            code = header_code or str(loaded.get("__type") or loaded.get("code") or "").rsplit("#", 1)[-1]
            message = str(loaded.get("message") or loaded.get("Message") or "")
            if code:
                return code, message
    if m := _XML_ERROR.search(text):
        return m.group("code"), m.group("message") or ""
    return header_code or str(status), ""
