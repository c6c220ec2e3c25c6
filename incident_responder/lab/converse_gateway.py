"""A local HTTP server speaking Bedrock Runtime's Converse wire protocol, for the lab and the tests.

The agent functions reach it as they would Bedrock, through ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``: botocore signs the
request (SigV4, service ``bedrock``), POSTs ``/model/{modelId}/converse`` with the Converse JSON body, and parses the
JSON answer, or an error from its status, ``x-amzn-ErrorType`` header and ``message``. What answers is a *backend*:

* :class:`OfflineBackend`: the project's offline model, over the wire (the request read back into LangChain messages,
  its answer written as Converse content blocks): a Converse-speaking model that solves the corpus; with a
  :class:`PromptCache`, its usage reports cache reads and writes as Bedrock's prompt caching would;
* :class:`ScriptedBackend`: a list of answers (or errors), one per call, as a test scripts them;
* lab/cassettes.py's ``ForwardBackend`` (real Bedrock, with the user's credentials: ``responder eval``) and
  ``ReplayBackend`` (the answers a recording kept, with no credentials: ``responder eval --replay``).

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
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PATH = re.compile(r"^/model/(?P<model>[^/]+)/converse$")
SIGNATURE = re.compile(
    r"Credential=(?P<key>[^/]+)/(?P<scope>[^,]+), SignedHeaders=(?P<headers>[^,]+), Signature=(?P<sig>\w+)"
)


class ConverseError(Exception):
    """An answer that is an error, as Bedrock sends one: an HTTP status, an error type and a message."""

    def __init__(self, status: int, error_type: str, message: str):
        super().__init__(message)
        self.status, self.error_type, self.message = status, error_type, message


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


def check_signature(method: str, url: str, headers: dict[str, str], body: bytes, secrets: dict[str, str]) -> str:
    """The access key that signed this request, when its SigV4 signature is what that key's secret makes;
    ValueError saying why not otherwise."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    lowered = {k.lower(): v for k, v in headers.items()}
    found = SIGNATURE.search(lowered.get("authorization", ""))
    if found is None:
        raise ValueError("no SigV4 Authorization header")
    key = found.group("key")
    if key not in secrets:
        raise ValueError(f"signed with an unknown access key {key}")
    _, region, service, _ = found.group("scope").split("/")
    signed = found.group("headers").split(";")
    request = AWSRequest(method=method, url=url, data=body, headers={h: lowered[h] for h in signed if h in lowered})
    request.context["timestamp"] = lowered["x-amz-date"]
    signer = SigV4Auth(Credentials(key, secrets[key], lowered.get("x-amz-security-token")), service, region)
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if expected != found.group("sig"):
        raise ValueError("the SigV4 signature does not match the key's secret")
    return key


# -- Converse <-> LangChain ---------------------------------------------------------------------------
def to_langchain(request: dict[str, Any]) -> tuple[list[Any], list[dict[str, Any]]]:
    """A Converse request as LangChain messages and OpenAI-style tool definitions."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    messages: list[Any] = []
    system = "".join(block.get("text", "") for block in request.get("system", []))
    if system:
        messages.append(SystemMessage(system))
    names: dict[str, str] = {}
    for message in request.get("messages", []):
        texts = [b["text"] for b in message["content"] if "text" in b]
        if message["role"] == "assistant":
            calls = []
            for block in message["content"]:
                if "toolUse" in block:
                    use = block["toolUse"]
                    names[use["toolUseId"]] = use["name"]
                    calls.append({"name": use["name"], "args": use.get("input") or {}, "id": use["toolUseId"]})
            messages.append(AIMessage(content="".join(texts), tool_calls=calls))
            continue
        for block in message["content"]:
            if "toolResult" in block:
                result = block["toolResult"]
                parts = [c["text"] if "text" in c else json.dumps(c.get("json")) for c in result.get("content", [])]
                messages.append(
                    ToolMessage(
                        content="".join(parts),
                        tool_call_id=result["toolUseId"],
                        name=names.get(result["toolUseId"], ""),
                        status=result.get("status", "success"),
                    )
                )
        if texts:
            messages.append(HumanMessage("".join(texts)))
    tools = [
        {
            "type": "function",
            "function": {
                "name": t["toolSpec"]["name"],
                "description": t["toolSpec"].get("description", ""),
                "parameters": t["toolSpec"]["inputSchema"]["json"],
            },
        }
        for t in request.get("toolConfig", {}).get("tools", [])
        if "toolSpec" in t
    ]
    return messages, tools


def to_converse(message: Any) -> dict[str, Any]:
    """A LangChain AIMessage as a Converse response."""
    content: list[dict[str, Any]] = []
    if message.content:
        content.append({"text": message.content if isinstance(message.content, str) else json.dumps(message.content)})
    for call in message.tool_calls:
        content.append({"toolUse": {"toolUseId": call["id"], "name": call["name"], "input": call["args"]}})
    usage = message.usage_metadata or {}
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use" if message.tool_calls else "end_turn",
        "usage": {
            "inputTokens": usage.get("input_tokens", 0),
            "outputTokens": usage.get("output_tokens", 0),
            "totalTokens": usage.get("input_tokens", 0) + usage.get("output_tokens", 0),
        },
        "metrics": {"latencyMs": 1},
    }


# -- backends -----------------------------------------------------------------------------------------
Backend = Callable[[str, dict[str, Any]], dict[str, Any]]  # (model id, request) -> response, or ConverseError


class PromptCache:
    """Bedrock's prompt caching as its documentation describes it, so that the offline model over the wire reports
    cache reads and writes as Bedrock would: a request is read as tools, then system, then messages, block by block;
    at each cache point whose prefix holds at least the model's minimum of tokens that prefix is written to the cache,
    unless an earlier request wrote it; the longest cached prefix a request starts with (at a cache point or any of
    the 20 block boundaries before one) is read back. An entry lives five minutes from its last use. Tokens are the
    offline model's estimate, shared out in proportion to characters."""

    LOOKBACK = 20
    TTL_SECONDS = 300.0

    def __init__(self, clock: Callable[[], float] | None = None):
        import time

        self.clock = clock or time.monotonic
        self._entries: dict[str, float] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _blocks(request: dict[str, Any]) -> list[dict[str, Any] | str]:
        blocks: list[dict[str, Any] | str] = list(request.get("toolConfig", {}).get("tools", []))
        blocks += request.get("system", [])
        for message in request.get("messages", []):
            blocks += [{message["role"]: block} if "cachePoint" not in block else block for block in message["content"]]
        return blocks

    def account(self, model_id: str, request: dict[str, Any], input_tokens: int) -> tuple[int, int]:
        """(tokens read from the cache, tokens written to it) of ``input_tokens``."""
        from incident_responder.agent.model_catalog import PROMPT_CACHING, base_model_id

        minimum = PROMPT_CACHING.get(base_model_id(model_id))
        if minimum is None:
            return 0, 0
        boundaries: list[tuple[str, int, bool]] = []  # (prefix digest, characters so far, a cache point here)
        running, chars = hashlib.sha256(model_id.encode()), 0
        for block in self._blocks(request):
            if isinstance(block, dict) and "cachePoint" in block:
                if boundaries:
                    boundaries[-1] = (*boundaries[-1][:2], True)
                continue
            text = json.dumps(block, sort_keys=True)
            running.update(text.encode())
            chars += len(text)
            boundaries.append((running.hexdigest(), chars, False))
        if not chars:
            return 0, 0

        def tokens(prefix_chars: int) -> int:  # the estimate, shared out
            return input_tokens * prefix_chars // chars

        points = [i for i, b in enumerate(boundaries) if b[2] and tokens(b[1]) >= minimum]
        now = self.clock()
        with self._lock:
            self._entries = {k: t for k, t in self._entries.items() if now - t < self.TTL_SECONDS}
            readable = {j for i in points for j in range(max(0, i - self.LOOKBACK), i + 1)}
            hits = [j for j in readable if boundaries[j][0] in self._entries]
            read_at = max(hits, default=-1)
            read = tokens(boundaries[read_at][1]) if read_at >= 0 else 0
            if read_at >= 0:
                self._entries[boundaries[read_at][0]] = now
            write = 0
            for i in points:
                if i > read_at:
                    self._entries[boundaries[i][0]] = now
                    write = tokens(boundaries[i][1]) - read
        return read, max(0, write)


class OfflineBackend:
    """The offline model answering over the wire; with a :class:`PromptCache`, its usage says what Bedrock's prompt
    caching would have read and written."""

    def __init__(self, prompt_cache: PromptCache | None = None):
        self.prompt_cache = prompt_cache

    def __call__(self, model_id: str, request: dict[str, Any]) -> dict[str, Any]:
        from incident_responder.agent.offline import OfflineChatModel

        messages, tools = to_langchain(request)
        response = to_converse(OfflineChatModel().bind_tools(tools).invoke(messages))
        if self.prompt_cache is not None:
            usage = response["usage"]
            read, write = self.prompt_cache.account(model_id, request, usage["inputTokens"])
            usage["inputTokens"] -= read + write  # Converse counts cache reads and writes apart
            usage |= {"cacheReadInputTokens": read, "cacheWriteInputTokens": write}
        return response


@dataclass
class ScriptedBackend:
    """One scripted answer per call, in order: a Converse response, a ConverseError to raise, or a function of the
    request returning either. Calls beyond the script are a test's mistake: answered with a 500."""

    turns: list[Any]
    _next: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, model_id: str, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if self._next >= len(self.turns):
                raise ConverseError(500, "InternalServerException", "the script has no more turns")
            turn = self.turns[self._next]
            self._next += 1
        if callable(turn):
            turn = turn(request)
        if isinstance(turn, ConverseError):
            raise turn
        return turn


def answer(
    *content: dict[str, Any],
    stop: str | None = None,
    input_tokens: int = 100,
    output_tokens: int = 20,
    cache_read: int = 0,
    cache_write: int = 0,
) -> dict[str, Any]:
    """A Converse response with these content blocks (``text(...)``, ``tool_use(...)``)."""
    usage = {"inputTokens": input_tokens, "outputTokens": output_tokens, "totalTokens": input_tokens + output_tokens}
    if cache_read or cache_write:
        usage |= {"cacheReadInputTokens": cache_read, "cacheWriteInputTokens": cache_write}
    uses = any("toolUse" in c for c in content)
    return {
        "output": {"message": {"role": "assistant", "content": list(content)}},
        "stopReason": stop or ("tool_use" if uses else "end_turn"),
        "usage": usage,
        "metrics": {"latencyMs": 1},
    }


def text(words: str) -> dict[str, Any]:
    return {"text": words}


def tool_use(name: str, arguments: dict[str, Any], use_id: str | None = None) -> dict[str, Any]:
    seed = use_id or hashlib.sha256(f"{name}{json.dumps(arguments, sort_keys=True)}".encode()).hexdigest()[:12]
    return {"toolUse": {"toolUseId": f"tooluse_{seed}", "name": name, "input": arguments}}


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


# -- the server ---------------------------------------------------------------------------------------
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
