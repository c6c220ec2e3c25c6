"""moto in server mode on 127.0.0.1, shared by every process that is given its endpoint.

Other processes (the MCP servers, the chaos CLI) reach it through boto3's own ``AWS_ENDPOINT_URL``
setting plus dummy credentials: :func:`lab_environment` gives exactly those variables.
"""

from __future__ import annotations

import io
import itertools
import json
import logging
import os
import re
import socket
import threading
import time
import uuid
import warnings
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, parse_qsl, unquote, urlsplit

import requests

from incident_responder.lab.engine import LAB_CHANGES
from incident_responder.lab.moto_gaps import fill_lambda_gaps

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
        # The account's management events, as CloudTrail's LookupEvents answers them (see CloudTrailRecorder).
        self.trail = CloudTrailRecorder()

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
        _list_metrics_by_dimension_name()
        fill_lambda_gaps()
        _serialize_dynamodb_writes()
        _list_services_once()
        if self.port:
            _ensure_free(self.host, self.port)
        self._server = ThreadedMotoServer(ip_address=self.host, port=self.port, verbose=False)
        self._server.start()
        self.host, self.port = self._server.get_host_and_port()
        # werkzeug looks the app up on its server for every request: wrapping it there is enough.
        wsgi_server = self._server._server
        self._failures = RequestFailures(wsgi_server.app, trail=self.trail)
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
        """Forget every resource (a fresh account) and re-apply the configuration; the trail is forgotten
        with them (by the request itself, whoever sends it)."""
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


def _list_metrics_by_dimension_name() -> None:
    """CloudWatch's ListMetrics takes a dimension filter without a value ("metrics with this dimension, whatever
    its value"); moto matches such a filter against a dimension whose value is None, which none has."""
    from moto.cloudwatch.models import MetricDatumBase

    original = MetricDatumBase.filter
    if getattr(original, "_lab_by_name", False):
        return

    def by_name(self: Any, namespace: Any, name: Any, dimensions: Any, already_present_metrics: Any = None) -> bool:
        named = [d["Name"] for d in dimensions or [] if d.get("Value") is None]
        valued = [d for d in dimensions or [] if d.get("Value") is not None]
        if named and not {n for n in named} <= {d.name for d in self.dimensions}:
            return False
        return original(self, namespace, name, valued, already_present_metrics)

    by_name._lab_by_name = True  # type: ignore[attr-defined]
    MetricDatumBase.filter = by_name


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
        # Each {Label} as a named group: the recorder reads the resource a call names from it (FunctionName, UUID).
        pattern = "".join(
            f"(?P<{re.sub(r'[^A-Za-z0-9_]', '_', part[1:-1].rstrip('+'))}>{'.+' if part.endswith('+}') else '[^/]+'})"
            if part.startswith("{")
            else re.escape(part)
            for part in parts
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


# Credential=AKID/20261123/us-east-1/lambda/aws4_request: the access key id, region and signing name.
_CREDENTIAL_SCOPE = re.compile(r"Credential=([^/,]+)/\d{8}/([^/,]+)/([^/,]+)/aws4_request")
# CloudWatch's RPCv2 CBOR protocol names the operation in the path.
_RPC_V2_PATH = re.compile(r"^/service/[^/]+/operation/([A-Za-z0-9]+)$")


@dataclass
class _Call:
    """One request as the lab reads it: who signed it, for which service and region, and which operation it is."""

    service: str
    operation: str | None
    region: str = LAB_REGION
    access_key_id: str = ""
    kind: str = "rest"  # target (JSON with X-Amz-Target), query (form), rest, cbor
    form: dict[str, str] | None = None  # the query protocol's parameters
    path_params: dict[str, str] | None = None  # a REST route's labels


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
        # A GET is never a write: its REST route is looked up only for a pending failure.
        call = self._identify(environ, routes=bool(self._pending) or environ.get("REQUEST_METHOD") != "GET")
        failure = self._take_failure(call) if self._pending else None
        if failure is not None:
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
        """Pass the call to moto and, when it succeeded, record its management event (the trail never fails it)."""
        request = b""
        if call.kind == "target" or (call.kind == "rest" and "json" in environ.get("CONTENT_TYPE", "")):
            request = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(request)
        status: list[int] = []

        def capture(line: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            status.append(int(line.split(" ", 1)[0]))
            return start_response(line, headers, exc_info) if exc_info else start_response(line, headers)

        result = self.app(environ, capture)
        try:
            body = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()
        if status and status[0] < 400:
            try:
                assert self.trail is not None
                self.trail.record_call(call, request, body, path=environ.get("PATH_INFO", ""))
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


def _xml_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# -- the trail: the management events CloudTrail would record ------------------------------------------------
# Who a call's access key id belongs to: the longest matching prefix wins, else DEFAULT_CALLER. A value is the
# principal after "arn:aws:iam::<account>:" ("user/NAME") or "arn:aws:sts::<account>:" ("assumed-role/ROLE/SESSION").
CALLERS: dict[str, str] = {"AKIACHAOS": "user/chaos"}
DEFAULT_CALLER = "user/lab-operator"  # the lab's own credentials (lab_environment): whoever runs the lab
TRAIL_CAPACITY = 5000  # the newest events kept (a management write is a few hundred bytes)

# Reads, and the data events CloudTrail records only when a trail asks for them (and the lab never does).
_READ_PREFIXES = (
    "Get",
    "List",
    "Describe",
    "Lookup",
    "Receive",
    "Search",
    "Query",
    "Scan",
    "BatchGet",
    "Head",
    "Select",
    "Filter",
    "Test",
    "Simulate",
    "Validate",
    "Check",
    "Estimate",
    "Generate",
    "Encrypt",
    "Decrypt",
    "ReEncrypt",
    "Sign",
    "Verify",
    "Invoke",
    "Send",
    "Poll",
    "Assume",
    "Preview",
)
_DATA_OPERATIONS = frozenset(
    {
        "PutMetricData",
        "PutLogEvents",
        "CreateLogStream",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "BatchWriteItem",
        "TransactWriteItems",
        "TransactGetItems",
        "ExecuteStatement",
        "BatchExecuteStatement",
        "ExecuteTransaction",
        "DeleteMessage",
        "DeleteMessageBatch",
        "ChangeMessageVisibility",
        "ChangeMessageVisibilityBatch",
        "Publish",
        "PublishBatch",
        "PutObject",
        "DeleteObject",
        "DeleteObjects",
        "CopyObject",
        "CreateMultipartUpload",
        "UploadPart",
        "UploadPartCopy",
        "CompleteMultipartUpload",
        "AbortMultipartUpload",
        "PutObjectTagging",
        "PutObjectAcl",
        "RestoreObject",
        "StartExecution",
        "StartSyncExecution",
        "StopExecution",
        "PutEvents",
        "PutRecord",
        "PutRecords",
        "PutTraceSegments",
        "PutTelemetryRecords",
    }
)


def is_management_write(service: str, operation: str) -> bool:
    """Whether CloudTrail records ``operation`` as a management write event (what the lab's trail keeps)."""
    return operation not in _DATA_OPERATIONS and not operation.startswith(_READ_PREFIXES)


# Lambda's events are named with the API version of their path, a few with a revision: UpdateFunctionConfiguration
# at /2015-03-31/... is UpdateFunctionConfiguration20150331v2.
_LAMBDA_V2 = frozenset({"UpdateFunctionConfiguration", "UpdateFunctionCode", "AddPermission", "RemovePermission"})
_API_VERSION_PATH = re.compile(r"^/(\d{4})-(\d\d)-(\d\d)/")

# A parameter naming a resource (in the request, or the response of a call that creates it) -> its CloudTrail type.
_RESOURCE_PARAMETERS = {
    "FunctionName": "AWS::Lambda::Function",
    "UUID": "AWS::Lambda::EventSourceMapping",
    "RoleName": "AWS::IAM::Role",
    "PolicyArn": "AWS::IAM::Policy",
    "UserName": "AWS::IAM::User",
    "KeyId": "AWS::KMS::Key",
    "QueueUrl": "AWS::SQS::Queue",
    "SecretId": "AWS::SecretsManager::Secret",
    "GroupId": "AWS::EC2::SecurityGroup",
    "NetworkAclId": "AWS::EC2::NetworkAcl",
    "SubnetId": "AWS::EC2::Subnet",
    "VpcId": "AWS::EC2::VPC",
    "TableName": "AWS::DynamoDB::Table",
    "logGroupName": "AWS::Logs::LogGroup",
    "TopicArn": "AWS::SNS::Topic",
    "stateMachineArn": "AWS::StepFunctions::StateMachine",
    "Bucket": "AWS::S3::Bucket",
}
_SERVICE_NAME_PARAMETERS = {"ssm": "AWS::SSM::Parameter", "secretsmanager": "AWS::SecretsManager::Secret"}


class TrailLookupError(ValueError):
    """A LookupEvents request CloudTrail refuses (its error code and message)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def _account_of(access_key_id: str) -> str:
    if account := os.environ.get("MOTO_ACCOUNT_ID"):
        return account
    return access_key_id if re.fullmatch(r"\d{12}", access_key_id or "") else LAB_ACCOUNT_ID


def _identity(access_key_id: str, account: str) -> tuple[dict[str, Any], str]:
    """CloudTrail's userIdentity for a call signed with ``access_key_id``, and the event's Username."""
    prefix = max((p for p in CALLERS if access_key_id.startswith(p)), key=len, default=None)
    principal = CALLERS[prefix] if prefix is not None else DEFAULT_CALLER
    if principal.startswith("assumed-role/"):
        _, role, session = (principal.split("/", 2) + [""])[:3]
        arn = f"arn:aws:sts::{account}:{principal}"
        identity = {
            "type": "AssumedRole",
            "principalId": f"AROA{account}:{session}",
            "arn": arn,
            "accountId": account,
            "accessKeyId": access_key_id,
            "sessionContext": {"sessionIssuer": {"type": "Role", "arn": f"arn:aws:iam::{account}:role/{role}"}},
        }
        return identity, session or role
    name = principal.rsplit("/", 1)[-1]
    identity = {
        "type": "IAMUser",
        "principalId": f"AIDA{account}{name.upper()}"[:21],
        "arn": f"arn:aws:iam::{account}:{principal}",
        "accountId": account,
        "accessKeyId": access_key_id,
        "userName": name,
    }
    return identity, name


def _queue_arn(url: str, region: str, account: str) -> str | None:
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    if len(segments) != 2:
        return None
    host = parts.hostname or ""
    found = re.match(r"^(?:sqs\.)?([a-z]{2}(?:-gov)?-[a-z]+-\d)\.", host)
    return f"arn:aws:sqs:{found.group(1) if found else region}:{segments[0] or account}:{segments[1]}"


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
    ) -> str:
        """Record one management event: ``resources`` as (ResourceType, ResourceName) pairs. Returns its EventId.
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
        detail = (identity, region, account, request_parameters or None)
        with self._lock:
            self._events.append((next(self._sequence), when, event, detail))
        return event_id

    @staticmethod
    def _cloudtrail_event(event: dict[str, Any], detail: tuple[Any, ...]) -> str:
        """The event's CloudTrailEvent: the record CloudTrail delivers, as LookupEvents returns it (JSON text)."""
        identity, region, account, request_parameters = detail
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
            },
            separators=(",", ":"),
        )

    def record_call(self, call: _Call, request: bytes, response: bytes, *, path: str = "") -> str | None:
        """The event for a call moto answered (``request`` / ``response``: the JSON bodies, when there are)."""
        if call.operation is None:
            return None
        account = _account_of(call.access_key_id)
        params: dict[str, Any] = dict(call.path_params or {})
        params.update(call.form or {})
        if request[:1] == b"{":
            loaded = json.loads(request)
            params.update(loaded if isinstance(loaded, dict) else {})
        answered: dict[str, Any] = {}
        if response[:1] == b"{":
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
