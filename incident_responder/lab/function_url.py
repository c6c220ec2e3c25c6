"""Lambda function URLs for the lab: HTTP in, the deployed handler called with a function-URL event.

moto cannot create ``AWS::Lambda::Url``, so the lab stands in for the Lambda service: each function URL
of the template becomes a small HTTP server (its own process, with the function's own environment)
that does what Lambda does before a function behind a URL runs:

* ``AuthType: AWS_IAM``: the request's SigV4 signature (service ``lambda``) is checked against the
  lab's credentials; a missing, malformed, stale or wrong signature gets Lambda's 403 and the function
  never runs. A valid one puts the caller's identity in ``requestContext.authorizer.iam``.
* the request becomes a payload-format-2.0 event, the handler named in the template is called with it
  and a Lambda context, and its response object becomes the HTTP response.

So the lab reaches the MCP servers through exactly the handler a deployed function URL invokes
(``handlers/diagnostics_mcp.py``), not through a separate app. What is not emulated: the caller's IAM
permissions (every lab process holds the same credentials; ``template.yaml`` tests check who may call
which URL), and response streaming.

    python -m incident_responder.lab.function_url --handler handlers.diagnostics_mcp.handler \\
        --function-name diagnostics --port 8123 --auth-type AWS_IAM
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hmac
import importlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from incident_responder.lab import fork_server
from incident_responder.lab.environment import LAB_ACCOUNT_ID, LAB_REGION
from incident_responder.lab.fork_server import ForkedProcess

MAX_CLOCK_SKEW_SECONDS = 15 * 60  # what AWS tolerates between X-Amz-Date and its own clock
LAB_CALLER_ROLE = "lab-caller"


class SignatureError(Exception):
    """Why a request's SigV4 signature was not accepted."""


def verify_sigv4(
    method: str,
    raw_path: str,
    query: str,
    headers: dict[str, str],
    body: bytes,
    secrets: dict[str, str],
    *,
    region: str = LAB_REGION,
    service: str = "lambda",
    now: float | None = None,
) -> dict[str, str]:
    """The caller's identity when the request carries a valid SigV4 signature; SignatureError otherwise.

    The signature is recomputed with botocore's own signer over the headers the request says it signed.
    """
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    lower = {k.lower(): v for k, v in headers.items()}
    authorization = lower.get("authorization", "")
    if not authorization.startswith("AWS4-HMAC-SHA256 "):
        raise SignatureError("missing SigV4 Authorization header")
    try:
        fields = dict(part.strip().split("=", 1) for part in authorization.removeprefix("AWS4-HMAC-SHA256 ").split(","))
        access_key, date, scope_region, scope_service, terminator = fields["Credential"].split("/")
        signed_headers = fields["SignedHeaders"].split(";")
        signature = fields["Signature"]
    except (KeyError, ValueError) as exc:
        raise SignatureError(f"malformed Authorization header ({exc})") from None
    if terminator != "aws4_request" or scope_service != service or scope_region != region:
        raise SignatureError(f"credential scope {scope_region}/{scope_service} is not {region}/{service}")
    secret = secrets.get(access_key)
    if secret is None:
        raise SignatureError(f"unknown access key {access_key}")
    amz_date = lower.get("x-amz-date", "")
    try:
        signed_at = datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        raise SignatureError("missing or malformed X-Amz-Date") from None
    if not amz_date.startswith(date) or abs((now or time.time()) - signed_at) > MAX_CLOCK_SKEW_SECONDS:
        raise SignatureError("signature date is outside the allowed clock skew")
    if "host" not in signed_headers or any(h not in lower for h in signed_headers):
        raise SignatureError("a signed header is missing from the request (host must be signed)")
    request = AWSRequest(
        method=method,
        url=f"http://{lower['host']}{raw_path}" + (f"?{query}" if query else ""),
        data=body,
        headers={h: lower[h] for h in signed_headers},
    )
    request.context["timestamp"] = amz_date
    signer = SigV4Auth(Credentials(access_key, secret, lower.get("x-amz-security-token")), service, region)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    if not hmac.compare_digest(expected, signature):
        raise SignatureError("the request signature does not match")
    return {
        "accessKey": access_key,
        "accountId": LAB_ACCOUNT_ID,
        "callerId": f"AROALAB:{access_key}",
        "userArn": f"arn:aws:sts::{LAB_ACCOUNT_ID}:assumed-role/{LAB_CALLER_ROLE}/{access_key}",
        "userId": f"AROALAB:{access_key}",
    }


def function_url_event(
    method: str,
    raw_path: str,
    query: str,
    headers: dict[str, str],
    body: bytes,
    *,
    iam: dict[str, str] | None,
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """The event Lambda gives a function behind a URL (payload format version 2.0)."""
    lower = {k.lower(): v for k, v in headers.items()}
    domain = lower.get("host", "lambda-url")
    now = datetime.now(UTC)
    text = body.decode("utf-8") if body else ""
    context: dict[str, Any] = {
        "accountId": LAB_ACCOUNT_ID if iam else "anonymous",
        "apiId": domain.split(".")[0].split(":")[0],
        "domainName": domain,
        "domainPrefix": domain.split(".")[0],
        "http": {
            "method": method,
            "path": raw_path,
            "protocol": "HTTP/1.1",
            "sourceIp": source_ip,
            "userAgent": lower.get("user-agent", ""),
        },
        "requestId": str(uuid.uuid4()),
        "routeKey": "$default",
        "stage": "$default",
        "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
        "timeEpoch": int(now.timestamp() * 1000),
    }
    if iam:
        context["authorizer"] = {"iam": {**iam, "cognitoIdentity": None, "principalOrgId": None}}
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": raw_path,
        "rawQueryString": query,
        "headers": lower,
        "requestContext": context,
        "body": text,
        "isBase64Encoded": False,
    }


def _forbidden(reason: str) -> tuple[int, dict[str, str], bytes]:
    # Lambda answers a refused IAM request itself; the function is never invoked.
    return 403, {"content-type": "application/json", "x-lab-refusal": reason[:200]}, b'{"Message":"Forbidden"}'


class FunctionUrl:
    """One function URL: authenticates like Lambda, then calls the handler in this process."""

    def __init__(self, handler: Any, function_name: str, auth_type: str, secrets: dict[str, str], timeout: int = 60):
        if auth_type not in ("AWS_IAM", "NONE"):
            raise ValueError(f"unknown AuthType {auth_type!r}")
        self.handler = handler
        self.function_name = function_name
        self.auth_type = auth_type
        self.secrets = secrets
        self.timeout = timeout

    def __call__(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        from incident_responder.lab.lambda_context import LambdaContext

        parts = urlsplit(target)
        iam = None
        if self.auth_type == "AWS_IAM":
            try:
                iam = verify_sigv4(method, parts.path, parts.query, headers, body, self.secrets)
            except SignatureError as exc:
                return _forbidden(str(exc))
        event = function_url_event(method, parts.path, parts.query, headers, body, iam=iam)
        context = LambdaContext(self.function_name, timeout_seconds=self.timeout)
        try:
            response = self.handler(event, context)
        except Exception as exc:  # noqa: BLE001 - what Lambda returns when the function raises
            print(f"[ERROR] {type(exc).__name__}: {exc}", file=sys.stderr)
            return 502, {"content-type": "application/json"}, b'{"Message":"Internal Server Error"}'
        return _http_response(response)


def _http_response(response: Any) -> tuple[int, dict[str, str], bytes]:
    """Lambda's translation of a function's return value (a dict with statusCode, or anything else)."""
    if not isinstance(response, dict) or "statusCode" not in response:
        return 200, {"content-type": "application/json"}, json.dumps(response).encode()
    body = response.get("body") or ""
    data = base64.b64decode(body) if response.get("isBase64Encoded") else str(body).encode()
    return int(response["statusCode"]), dict(response.get("headers") or {}), data


def serve(
    url: FunctionUrl, port: int, host: str = "127.0.0.1", listening: socket.socket | None = None
) -> ThreadingHTTPServer:
    """The function URL's server on ``port``, or on ``listening``: a socket the lab bound and listens on already,
    passed down to this process, so no other process can take the port between the lab choosing it and this one
    serving it."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes: with Nagle's algorithm the body waits for the client's delayed
        # ACK (40 ms on Linux loopback), on every request of a keep-alive connection.
        disable_nagle_algorithm = True

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            status, headers, data = url(self.command, self.path, dict(self.headers.items()), body)
            self.send_response(status)
            for key, value in headers.items():
                if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = do_PUT = _handle  # noqa: N815 - http.server's API

        def log_message(self, *args: Any) -> None:
            pass

    if listening is None:
        server = ThreadingHTTPServer((host, port), Handler)
    else:
        server = ThreadingHTTPServer((host, port), Handler, bind_and_activate=False)
        server.socket.close()
        server.socket = listening
        server.server_address = listening.getsockname()
    server.daemon_threads = True
    return server


def lab_secrets() -> dict[str, str]:
    """The credentials the lab accepts: the ones every lab process is given (lab_environment), and in an
    organisation lab each function's role credentials (LAB_ACCEPTED_KEYS, a JSON object of key -> secret)."""
    key, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    accepted = json.loads(os.environ.get("LAB_ACCEPTED_KEYS") or "{}")
    return {**accepted, **({key: secret} if key and secret else {})}


def start_function_url(
    handler: str, function_name: str, port: int, env: dict[str, str], *, auth_type: str, timeout: int = 60
) -> subprocess.Popen | ForkedProcess:
    """A function URL in its own process (the function's own environment), returned once it answers."""
    return wait_until_ready(spawn_function_url(handler, function_name, port, env, auth_type=auth_type, timeout=timeout))


def spawn_function_url(
    handler: str,
    function_name: str,
    port: int,
    env: dict[str, str],
    *,
    auth_type: str,
    timeout: int = 60,
    listening: socket.socket | None = None,
) -> subprocess.Popen | ForkedProcess:
    """A function URL's process, started but not yet answering: several start side by side, then
    :func:`wait_until_ready` waits for each (each imports its handler). ``listening``: the socket the lab holds on
    ``port``, handed to the process (the caller closes its copy); the process is then forked from the lab's fork
    server (lab/fork_server.py), which has the MCP SDK and the AWS SDK imported already, instead of a new
    interpreter importing them again."""
    argv = ["--handler", handler, "--function-name", function_name, "--port", str(port), "--auth-type", auth_type]
    argv += ["--timeout", str(timeout)]
    proc: subprocess.Popen | ForkedProcess
    if listening is not None:
        arguments = {"argv": argv, "environment": env}
        proc = ForkedProcess(
            fork_server.fork(f"{__name__}:serve_forked", listening.fileno(), arguments, f"url:{function_name}")
        )
    else:
        proc = subprocess.Popen(
            [sys.executable, "-m", "incident_responder.lab.function_url", *argv, "--lab-pid", str(os.getpid())],
            env=env,
            stdout=2,  # the function's logs and metrics to the lab's stderr, as the lab's workers (lab/workers.py)
            # A process group of its own: a terminal's Ctrl-C reaches the lab only, which stops it (a SIGINT mid-import
            # printed tracebacks); a lab that dies without stopping it is left by _exit_with_parent.
            process_group=0,
        )
    proc.function_url = (function_name, port, auth_type, env)  # type: ignore[union-attr]
    return proc


def wait_until_ready(proc: subprocess.Popen | ForkedProcess, seconds: float = 30) -> subprocess.Popen | ForkedProcess:
    """``proc`` (from :func:`spawn_function_url`) once its /health answers; killed if it never does."""
    import httpx

    from incident_responder.mcp_transport.client import SigV4Auth

    function_name, port, auth_type, env = proc.function_url  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{port}/health"
    auth = None
    if auth_type == "AWS_IAM":
        from botocore.credentials import Credentials

        auth = SigV4Auth(Credentials(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]), LAB_REGION)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"function URL for {function_name} exited with code {proc.returncode}")
            try:
                if httpx.get(url, auth=auth, timeout=5).status_code == 200:
                    return proc
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"function URL for {function_name} did not answer on port {port}")
    except BaseException:  # Ctrl-C or SIGTERM while waiting too: the caller never got the process to stop
        proc.kill()
        proc.wait()
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A lab function URL in front of one handler")
    parser.add_argument("--handler", required=True, help="module.attribute, as in template.yaml")
    parser.add_argument("--function-name", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--auth-type", choices=["AWS_IAM", "NONE"], required=True)
    parser.add_argument("--timeout", type=int, default=60)
    parser.add_argument("--lab-pid", type=int, help="the lab's process (default: the parent as this one starts)")
    parser.add_argument("--listen-fd", type=int, help="a socket listening on --port already, passed by the lab")
    args = parser.parse_args(argv)
    # Watched from the start, and by the pid the lab gave: a lab gone while this one imported its handler (Ctrl-C
    # as the demo starts) left a parent of 1 to watch, and this process running for good.
    threading.Thread(target=_exit_with_parent, args=(args.lab_pid or os.getppid(),), daemon=True).start()
    module, _, attribute = args.handler.rpartition(".")
    os.environ.setdefault("AWS_LAMBDA_FUNCTION_NAME", args.function_name)
    handler = getattr(importlib.import_module(module), attribute)
    url = FunctionUrl(handler, args.function_name, args.auth_type, lab_secrets(), timeout=args.timeout)
    with contextlib.suppress(KeyboardInterrupt):
        listening = socket.socket(fileno=args.listen_fd) if args.listen_fd is not None else None
        serve(url, args.port, listening=listening).serve_forever()
    return 0


def serve_forked(listening_fd: int, argv: list[str], environment: dict[str, str]) -> None:
    """A function URL's server forked by the lab's fork server: the function's environment, then :func:`main` on the
    socket the lab handed over, watching the fork server (which ends with the lab)."""
    os.environ.clear()
    os.environ.update(environment)
    try:
        main([*argv, "--listen-fd", str(listening_fd), "--lab-pid", str(os.getppid())])
    except BaseException:  # noqa: BLE001 - said on the lab's stderr, as a process of its own would
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)


def _exit_with_parent(parent: int) -> None:
    """A lab that dies without stopping its function URLs (SIGKILL, a crash) must not leave them running."""
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
