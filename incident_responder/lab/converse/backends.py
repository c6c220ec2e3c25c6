"""The model's side of the lab: what answers the Converse endpoint: the offline model over the wire (with Bedrock's
prompt caching accounted for), or a test's script; and the helpers a script is written with."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from incident_responder.lab.converse.errors import ConverseError
from incident_responder.lab.converse.wire import to_converse, to_langchain

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
        from incident_responder.agent.offline.model import OfflineChatModel

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
