"""moto in server mode on 127.0.0.1, shared by every process that is given its endpoint.

Other processes (the MCP servers, the chaos CLI) reach it through boto3's own ``AWS_ENDPOINT_URL``
setting plus dummy credentials: :func:`lab_environment` gives exactly those variables.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import socket
import threading
import uuid
import warnings
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, parse_qsl

import requests

from incident_responder.lab.engine import LAB_CHANGES

LAB_REGION = "us-east-1"
LAB_ACCOUNT_ID = "123456789012"
# Client settings a shell may hold for other accounts or servers: they would win over the lab's own (a
# profile, an MCP server list) or change how requests to the lab's function URLs are signed (a bearer
# key). Lab commands drop them in their own process; `responder lab up` tells other shells to unset them.
NOT_FOR_THE_LAB = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "MCP_API_KEY",
    "MCP_API_KEY_PARAMETER",
    "MCP_AUTH",
    "RESPONDER_MCP_CONFIG",
    "RESPONDER_MCP_SERVERS",
)

# Posted before any resource exists: Lambda without Docker, Step Functions that really execute.
MOTO_CONFIG = {"lambda": {"use_docker": False}, "stepfunctions": {"execute_state_machine": True}}


def lab_environment(endpoint_url: str) -> dict[str, str]:
    """Environment variables that point boto3 (in any process) at the lab."""
    return {
        "AWS_ENDPOINT_URL": endpoint_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": LAB_REGION,
        "AWS_REGION": LAB_REGION,
    }


class Lab:
    """A running moto server. Use as a context manager, or call :meth:`start` / :meth:`stop`."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1"):
        self.host = host
        self.port = port
        self._server: Any = None
        self.chaos_state_dir: Path | None = None
        self._failures: RequestFailures | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        return lab_environment(self.endpoint_url)

    def start(self) -> Lab:
        # Imported here: only the lab needs moto, deployed Lambdas never do.
        from moto.server import ThreadedMotoServer

        from chaos.snapshots import default_state_dir, forget_endpoint
        from incident_responder.lab.botocore_data import share_loaders

        for noisy in ("werkzeug", "moto.stepfunctions"):
            logging.getLogger(noisy).setLevel(logging.ERROR)
        # moto's CloudFormation skips the stack's SNS subscriptions (and says so, twice, per deploy); the lab
        # creates them through the API (lab/stack.py).
        logging.getLogger("moto").addFilter(_NOT_SUBSCRIPTIONS)  # the same instance: added once per process
        warnings.filterwarnings("ignore", message="Tried to parse AWS::SNS::Subscription", category=UserWarning)
        share_loaders()  # before moto makes a session per service backend
        _answer_cloudtrail_lookups()
        _serialize_dynamodb_writes()
        _list_services_once()
        if self.port:
            _ensure_free(self.host, self.port)
        self._server = ThreadedMotoServer(ip_address=self.host, port=self.port, verbose=False)
        self._server.start()
        self.host, self.port = self._server.get_host_and_port()
        # werkzeug looks the app up on its server for every request: wrapping it there is enough.
        wsgi_server = self._server._server
        self._failures = RequestFailures(wsgi_server.app)
        wsgi_server.app = self._failures
        # moto's own Task states call back into "localhost:MOTO_PORT".
        os.environ["MOTO_PORT"] = str(self.port)
        self.configure()
        # Chaos keys the originals it keeps by endpoint; those of an earlier lab on this port describe
        # an account that is gone, and restoring them would fail or put back the wrong values.
        self.chaos_state_dir = default_state_dir()
        forget_endpoint(self.chaos_state_dir, self.endpoint_url)
        return self

    def configure(self) -> None:
        response = requests.post(f"{self.endpoint_url}/moto-api/config", json=MOTO_CONFIG, timeout=10)
        response.raise_for_status()

    def reset(self) -> None:
        """Forget every resource (a fresh account) and re-apply the configuration."""
        requests.post(f"{self.endpoint_url}/moto-api/reset", timeout=30).raise_for_status()
        self.configure()

    def clear_metrics(self) -> None:
        """Forget every CloudWatch datapoint (CloudWatch has no API to delete them; the lab's moto is in
        this process): what a workload published in one scenario must not show in the next one's window."""
        from moto.cloudwatch.models import cloudwatch_backends

        for backends in cloudwatch_backends.values():
            for backend in backends.values():
                backend.metric_data.clear()
                backend.paged_metric_data.clear()

    def fail_requests(
        self,
        action: str,
        *,
        times: int = 1,
        code: str = "InjectedFailure",
        status: int = 400,
        message: str = "the lab failed this request on purpose",
        service: str | None = None,
    ) -> None:
        """Answer the next ``times`` requests for API operation ``action`` (e.g. ``PutFunctionConcurrency``,
        ``AuthorizeSecurityGroupEgress``) with the AWS error ``code``, without reaching moto.

        ``service`` (the signing name: ``lambda``, ``ec2``, ``iam``, ...) narrows the match. Each attempt
        counts, so a 5xx status that botocore retries uses up ``times`` faster: the default 400 is not retried.
        JSON, query, EC2 and REST APIs are matched; CloudWatch's CBOR protocol is not.
        """
        if self._failures is None:
            raise RuntimeError("the lab is not running")
        self._failures.add(
            _Failure(action=action, service=service, times=times, code=code, status=status, message=message)
        )

    def clear_failures(self) -> None:
        """Forget every pending injected failure."""
        if self._failures is not None:
            self._failures.clear()

    @property
    def failed_requests(self) -> list[str]:
        """``service:Operation`` of each request answered with an injected failure, oldest first."""
        return list(self._failures.failed) if self._failures is not None else []

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> Lab:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _answer_cloudtrail_lookups() -> None:
    """moto has no CloudTrail LookupEvents: its server prints a traceback and answers 500, which botocore retries.
    The lab records no management events, so it answers as an account with no trail history does: no events."""
    from moto.cloudtrail.responses import CloudTrailResponse

    if not hasattr(CloudTrailResponse, "lookup_events"):
        CloudTrailResponse.lookup_events = lambda self: json.dumps({"Events": []})  # type: ignore[attr-defined]


class _NotSubscriptions(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "AWS::SNS::Subscription" not in record.getMessage()


_NOT_SUBSCRIPTIONS = _NotSubscriptions()


def _list_services_once() -> None:
    """moto's server finds a request's service by listing its own package directory (a stat per service,
    some 150) on every request: a fifth of a simple call's time. The list cannot change while the lab runs."""
    from moto import backends

    if getattr(backends.list_of_moto_modules, "_lab_cached", False):
        return
    services = tuple(backends.list_of_moto_modules())

    def listed() -> tuple[str, ...]:
        return services

    listed._lab_cached = True  # type: ignore[attr-defined]
    backends.list_of_moto_modules = listed


_DYNAMODB_WRITES = threading.RLock()


def _serialize_dynamodb_writes() -> None:
    """DynamoDB applies a conditional write atomically; moto checks the condition and writes without a lock, so
    two concurrent requests can both pass it. The responder relies on that atomicity (one approval click
    decides, one alert of a group starts the execution): the lab's server applies writes one at a time."""
    from moto.dynamodb.models import DynamoDBBackend

    for name in ("put_item", "update_item", "delete_item", "transact_write_items"):
        method = getattr(DynamoDBBackend, name)
        if getattr(method, "_lab_serialized", False):
            continue

        def serialized(*args: Any, _method: Any = method, **kwargs: Any) -> Any:
            try:
                with _DYNAMODB_WRITES:
                    return _method(*args, **kwargs)
            finally:
                LAB_CHANGES.bump("table")  # waiters on an incident's status look again

        serialized._lab_serialized = True  # type: ignore[attr-defined]
        setattr(DynamoDBBackend, name, serialized)


def _ensure_free(host: str, port: int) -> None:
    """moto's server thread dies on a port in use while its start() waits forever: find out first."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds (allow_reuse_address)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise OSError(
                exc.errno,
                f"port {port} on {host} is already in use ({exc.strerror}): stop what holds it, or pass --port",
            ) from None


# -- the failure seam: make chosen API calls fail ----------------------------------------------------
@dataclass
class _Failure:
    action: str
    service: str | None
    times: int
    code: str
    status: int
    message: str


@dataclass(frozen=True)
class _Route:
    """One REST operation as botocore's model routes it: method, path, and the query keys and headers it requires."""

    name: str
    method: str
    path: re.Pattern[str]
    query: tuple[tuple[str, str], ...]  # (key, value); an empty value: the key alone must be there
    headers: tuple[str, ...]  # WSGI environ names (HTTP_X_AMZ_COPY_SOURCE)

    @classmethod
    def of(cls, operation: Any) -> _Route:
        http = operation.http
        uri, _, literal = http.get("requestUri", "/").partition("?")
        parts = re.split(r"(\{[^}]+\})", uri)
        pattern = "".join(
            (".+" if part.endswith("+}") else "[^/]+") if part.startswith("{") else re.escape(part) for part in parts
        )
        query = [(k, v) for k, v in parse_qsl(literal, keep_blank_values=True) if k != "x-id"]
        headers = []
        shape = operation.input_shape
        for member in shape.required_members if shape is not None else ():
            location = shape.members[member].serialization.get("location")
            name = shape.members[member].serialization.get("name", member)
            if location == "querystring":
                query.append((name, ""))
            elif location == "header":
                headers.append("HTTP_" + name.upper().replace("-", "_"))
        return cls(
            name=operation.name,
            method=http.get("method", "POST"),
            path=re.compile(pattern.rstrip("/") + "/?"),
            query=tuple(query),
            headers=tuple(headers),
        )

    def matches(self, query: dict[str, list[str]], environ: dict[str, Any]) -> bool:
        return all(k in query and (not v or v in query[k]) for k, v in self.query) and all(
            h in environ for h in self.headers
        )


_CREDENTIAL_SCOPE = re.compile(r"Credential=[^/,]+/\d{8}/[^/,]+/([^/,]+)/aws4_request")


class RequestFailures:
    """WSGI middleware around moto's app: answers matching requests with an AWS error, passes the rest."""

    def __init__(self, app: Any):
        self.app = app
        self.failed: list[str] = []
        self._pending: list[_Failure] = []
        self._lock = threading.Lock()
        self._rest_routes: dict[str, list[_Route]] = {}
        self._protocols: dict[str, str] = {}

    def add(self, failure: _Failure) -> None:
        if failure.times < 1:
            raise ValueError("times must be 1 or more")
        with self._lock:
            self._pending.append(failure)

    def clear(self) -> None:
        with self._lock:
            self._pending.clear()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        if not self._pending:
            return self.app(environ, start_response)
        service, operation = self._operation(environ)
        with self._lock:
            failure = next(
                (
                    f
                    for f in self._pending
                    if f.action == operation and (f.service is None or f.service == service) and f.times > 0
                ),
                None,
            )
            if failure is not None:
                failure.times -= 1
                if failure.times == 0:
                    self._pending.remove(failure)
                self.failed.append(f"{service}:{operation}")
        if failure is None:
            return self.app(environ, start_response)
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

    def _operation(self, environ: dict[str, Any]) -> tuple[str, str | None]:
        """(signing service, operation name) of a request, from its target header, Action or REST route."""
        match = _CREDENTIAL_SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
        service = match.group(1) if match else ""
        target = environ.get("HTTP_X_AMZ_TARGET")
        if target:
            return service, target.rsplit(".", 1)[-1]
        action = parse_qs(environ.get("QUERY_STRING", "")).get("Action")
        if not action and "x-www-form-urlencoded" in environ.get("CONTENT_TYPE", ""):
            # Read the form once and hand moto an identical stream.
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(body)
            action = parse_qs(body.decode("utf-8", "replace")).get("Action")
        if action:
            return service, action[0]
        method, path = environ.get("REQUEST_METHOD", ""), environ.get("PATH_INFO", "")
        query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        for route in self._routes(service):
            if route.method == method and route.path.fullmatch(path) and route.matches(query, environ):
                return service, route.name
        return service, None

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


def _xml_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
