"""SERVING the lab: its own process's calls to moto handed to the server's WSGI application in the caller's thread.

The lab's process makes most of the lab's requests (each workload's invocations, logs and metrics, its configuration
read back, the tables emptied between scenarios, the Step Functions interpreter's service integrations). Over HTTP,
each is a new connection (werkzeug's server closes every one), a new thread, and the request and the answer written
out and parsed again by http.server and urllib3: about a third of what such a request costs the lab.

Here, a request of this process for the lab's address goes to the same application the server serves (the lab's
failures, its trail and its count, then moto): the same request, signed and serialized by botocore, and the same
answer parsed by botocore; only the socket is skipped. Every other process (the functions' workers, the function
URLs' servers, the chaos CLI) still calls over HTTP, as the deployed code does.
"""

from __future__ import annotations

import io
import sys
import threading
from typing import Any
from urllib.parse import unquote, urlsplit

from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.compat import HTTPHeaders
from botocore.httpsession import URLLib3Session

_APPS: dict[str, Any] = {}  # "host:port" -> the WSGI application served there
_LOCK = threading.Lock()
_SEND = URLLib3Session.send  # botocore's own, for every other address


def serve_in_process(netloc: str, app: Any) -> None:
    """This process's requests for ``netloc`` ("host:port") go to ``app`` directly from now on."""
    with _LOCK:
        _APPS[netloc] = app
        URLLib3Session.send = _send  # type: ignore[method-assign]


def stop_serving_in_process(netloc: str) -> None:
    with _LOCK:
        _APPS.pop(netloc, None)
        if not _APPS:
            URLLib3Session.send = _SEND  # type: ignore[method-assign]


def _send(session: URLLib3Session, request: AWSPreparedRequest) -> AWSResponse:
    url = urlsplit(request.url)
    app = _APPS.get(url.netloc)
    if app is None:
        return _SEND(session, request)
    from moto.core.botocore_stubber import MockRawResponse  # the body as botocore reads it from urllib3

    status, headers, body = _call(app, request, url)
    return AWSResponse(request.url, status, headers, MockRawResponse(body))


def _call(app: Any, request: AWSPreparedRequest, url: Any) -> tuple[int, HTTPHeaders, bytes]:
    body = request.body
    if body is None:
        body = b""
    elif hasattr(body, "read"):
        body = body.read()
    if isinstance(body, str):
        body = body.encode("utf-8")
    environ = _environ(request, url, body)
    answer: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        answer["status"], answer["headers"] = status, headers
        return lambda data: answer.setdefault("written", []).append(data)

    result = app(environ, start_response)
    try:
        content = b"".join([*answer.get("written", []), *result])
    finally:
        if hasattr(result, "close"):
            result.close()
    headers = HTTPHeaders()
    for key, value in answer["headers"]:
        headers[key] = value
    return int(answer["status"].split(" ", 1)[0]), headers, content


def _environ(request: AWSPreparedRequest, url: Any, body: bytes) -> dict[str, Any]:
    """What moto's server (werkzeug's WSGIRequestHandler.make_environ, as moto's MotoRequestHandler extends it) makes
    of the same request."""
    from moto.core.request import (
        PRESERVED_HEADER_NAMES_ENVIRON_KEY,
        environ_key_for_header,
        should_preserve_original_header_name,
    )

    target = url.path + (f"?{url.query}" if url.query else "")
    environ: dict[str, Any] = {
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": url.scheme or "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "REQUEST_METHOD": request.method,
        "SCRIPT_NAME": "",
        "PATH_INFO": _wsgi(unquote(url.path)),
        "QUERY_STRING": _wsgi(url.query),
        "REQUEST_URI": _wsgi(target),
        "RAW_URI": _wsgi(target),
        "REMOTE_ADDR": "127.0.0.1",
        "REMOTE_PORT": 0,
        "SERVER_NAME": url.hostname or "",
        "SERVER_PORT": str(url.port or 80),
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": url.netloc,
        "CONTENT_LENGTH": str(len(body)),
    }
    headers = {k: v.decode("latin-1") if isinstance(v, bytes) else v for k, v in request.headers.items()}
    for name, value in headers.items():
        if "_" in name:
            continue
        key = name.upper().replace("-", "_")
        if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            key = f"HTTP_{key}"
        environ[key] = value.replace("\r\n", "")
    environ["CONTENT_LENGTH"] = str(len(body))  # the body as sent, whatever the header said
    # Headers with an underscore in their names (S3's metadata may have them) kept with their spelling, as moto's does.
    dashed = {environ_key_for_header(name) for name in headers if "_" not in name}
    names: dict[str, str] = {}
    values: dict[str, list[str]] = {}
    for name, value in headers.items():
        key = environ_key_for_header(name)
        if should_preserve_original_header_name(name) and key not in dashed:
            names.setdefault(key, name)
            values.setdefault(key, []).append(value.replace("\r\n", ""))
    environ.update((key, ",".join(each)) for key, each in values.items())
    environ[PRESERVED_HEADER_NAMES_ENVIRON_KEY] = names
    return environ


def _wsgi(text: str) -> str:
    """PEP 3333's native strings: the bytes of the URL as latin-1 (werkzeug's _wsgi_encoding_dance)."""
    return text.encode("utf-8").decode("latin-1")
