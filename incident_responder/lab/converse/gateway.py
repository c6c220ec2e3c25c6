"""The model's side of the lab: a local HTTP server speaking Bedrock Runtime's Converse wire protocol, for the lab and the tests.

The agent functions reach it as they would Bedrock, through ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``: botocore signs the
request (SigV4, service ``bedrock``), POSTs ``/model/{modelId}/converse`` with the Converse JSON body, and parses the
JSON answer, or an error from its status, ``x-amzn-ErrorType`` header and ``message``. What answers is a *backend*:

* :class:`OfflineBackend`: the project's offline model, over the wire (the request read back into LangChain messages,
  its answer written as Converse content blocks): a Converse-speaking model that solves the corpus; with a
  :class:`PromptCache`, its usage reports cache reads and writes as Bedrock's prompt caching would;
* :class:`ScriptedBackend`: a list of answers (or errors), one per call, as a test scripts them;
* forwarding.py's ``ForwardBackend`` (real Bedrock, with the user's credentials: ``responder eval``) and
  cassettes.py's ``ReplayBackend`` (the answers a recording kept, with no credentials: ``responder eval --replay``).

Every exchange (request, answer, the access key that signed it and whether its signature checked) is kept in
:attr:`ConverseGateway.exchanges`; :func:`check_signature` verifies a SigV4 signature with a known secret.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import re
import threading
import urllib.parse
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from incident_responder.lab.converse.backends import Backend
from incident_responder.lab.converse.errors import ConverseError
from incident_responder.lab.converse.wire import SIGNATURE, check_signature

PATH = re.compile(r"^/model/(?P<model>[^/]+)/converse$")


@dataclass
class Exchange:
    """One call: what the function sent and what it was answered."""

    model_id: str
    request: dict[str, Any]
    response: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    access_key: str | None = None
    region: str | None = None  # the Region the request was signed for
    signature_valid: bool | None = None


def default_catalog(region: str = "us-east-1", account: str = "123456789012") -> dict[str, dict[str, Any]]:
    """The control plane's answers for the default model, and one end-of-life model, as Bedrock shapes them."""
    from incident_responder.agent.model_catalog import DEFAULT_MODEL_ID, base_model_id

    base = base_model_id(DEFAULT_MODEL_ID)

    def model(model_id: str, name: str, status: str, kinds: list[str]) -> dict[str, Any]:
        arn = f"arn:aws:bedrock:{region}::foundation-model/{model_id}"
        details = {"modelArn": arn, "modelId": model_id, "modelName": name, "providerName": "Anthropic"}
        details |= {"inferenceTypesSupported": kinds, "modelLifecycle": {"status": status}}
        return {"modelDetails": details}

    profile = {
        "inferenceProfileId": DEFAULT_MODEL_ID,
        "inferenceProfileArn": f"arn:aws:bedrock:{region}:{account}:inference-profile/{DEFAULT_MODEL_ID}",
        "status": "ACTIVE",
        "type": "SYSTEM_DEFINED",
        "models": [{"modelArn": f"arn:aws:bedrock:::foundation-model/{base}"}],
    }
    return {
        "foundation-models": {
            base: model(base, "Claude Haiku 4.5", "ACTIVE", ["INFERENCE_PROFILE"]),
            "anthropic.claude-3-5-haiku-20241022-v1:0": model(
                "anthropic.claude-3-5-haiku-20241022-v1:0", "Claude 3.5 Haiku", "LEGACY", ["ON_DEMAND"]
            ),
        },
        "inference-profiles": {DEFAULT_MODEL_ID: profile},
    }


class ConverseGateway:
    """The HTTP server; ``secrets`` (access key -> secret) are the keys whose signatures it checks."""

    def __init__(self, backend: Backend, *, secrets: dict[str, str] | None = None, require_signature: bool = False):
        self.backend = backend
        self.secrets = dict(secrets or {})
        self.require_signature = require_signature
        self.exchanges: list[Exchange] = []
        self.catalog = default_catalog()  # what GetFoundationModel / GetInferenceProfile answer
        self._lock = threading.Lock()
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet: the lab's stderr is the functions' logs
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                gateway._serve(self)

            def do_GET(self) -> None:  # noqa: N802 - Bedrock's control plane, for responder doctor
                gateway._describe(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ConverseGateway:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._server.shutdown()
            self._server.server_close()

    def _serve(self, http: BaseHTTPRequestHandler) -> None:
        body = http.rfile.read(int(http.headers.get("Content-Length") or 0))
        matched = PATH.match(urllib.parse.urlsplit(http.path).path)
        if matched is None:
            self._send(http, 404, {"message": f"no such operation: {http.path}"}, "UnknownOperationException")
            return
        model_id = urllib.parse.unquote(matched.group("model"))
        exchange = Exchange(model_id=model_id, request=json.loads(body or b"{}"))
        if signed := SIGNATURE.search(http.headers.get("Authorization", "")):
            exchange.access_key, exchange.region = signed.group("key"), signed.group("scope").split("/")[1]
        try:
            check_signature("POST", f"{self.url}{http.path}", dict(http.headers), body, self.secrets)
            exchange.signature_valid = True
        except ValueError as exc:
            exchange.signature_valid = False
            if self.require_signature:
                exchange.error = {"status": 403, "type": "InvalidSignatureException", "message": str(exc)}
                self._record(exchange)
                self._send(http, 403, {"message": str(exc)}, "InvalidSignatureException")
                return
        try:
            exchange.response = self.backend(model_id, exchange.request)
        except ConverseError as exc:
            exchange.error = {"status": exc.status, "type": exc.error_type, "message": exc.message}
            self._record(exchange)
            self._send(http, exc.status, {"message": exc.message}, exc.error_type)
            return
        except Exception as exc:  # noqa: BLE001 - a backend's failure is the model's 500, not a dropped connection
            exchange.error = {
                "status": 500,
                "type": "InternalServerException",
                "message": f"{type(exc).__name__}: {exc}",
            }
            self._record(exchange)
            self._send(http, 500, {"message": exchange.error["message"]}, "InternalServerException")
            return
        self._record(exchange)
        self._send(http, 200, exchange.response)

    def _describe(self, http: BaseHTTPRequestHandler) -> None:
        """GetFoundationModel (``/foundation-models/{id}``) and GetInferenceProfile (``/inference-profiles/{id}``)
        from :attr:`catalog`, as Bedrock's control plane answers them."""
        path = urllib.parse.unquote(urllib.parse.urlsplit(http.path).path)
        kind, _, name = path.strip("/").partition("/")
        found = self.catalog.get(kind, {}).get(name)
        if found is None:
            self._send(
                http, 404, {"message": f"The specified resource {name} was not found."}, "ResourceNotFoundException"
            )
        else:
            self._send(http, 200, found)

    def _record(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)

    @staticmethod
    def _send(http: BaseHTTPRequestHandler, status: int, body: dict[str, Any], error_type: str | None = None) -> None:
        data = json.dumps(body).encode()
        http.send_response(status)
        http.send_header("Content-Type", "application/json")
        http.send_header("Content-Length", str(len(data)))
        http.send_header("x-amzn-RequestId", hashlib.sha256(data).hexdigest()[:32])
        if error_type:
            http.send_header("x-amzn-ErrorType", f"{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/")
        http.send_header("Date", datetime.datetime.now(datetime.UTC).strftime("%a, %d %b %Y %H:%M:%S GMT"))
        http.end_headers()
        http.wfile.write(data)
