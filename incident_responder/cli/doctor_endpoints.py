"""``responder doctor``'s checks of an ``openai:`` or ``ollama:`` model: the endpoint answers, the key is accepted,
the model is one it serves, and (OpenAI-compatible) it answers a minimal chat call. The endpoint and key are the ones
the agents use: OPENAI_BASE_URL and OPENAI_API_KEY (deployed: ModelBaseUrl and the SSM parameter
ModelApiKeyParameterName names), OLLAMA_HOST for Ollama."""

from __future__ import annotations

import os
import time
from typing import Any

import httpx

from incident_responder.cli.doctor_checks import FAIL, PASS, WARN, Check

TIMEOUT = httpx.Timeout(10.0, connect=5.0)  # a check, not an agent turn: a server that slow is worth saying so
OPENAI_DEFAULT = "https://api.openai.com/v1"
OLLAMA_DEFAULT = "http://127.0.0.1:11434"
# What a wrong URL or a server that is not there raises (a malformed URL is not an HTTPError).
UNREACHABLE = (httpx.HTTPError, httpx.InvalidURL)


def _unreachable(url: str, exc: Exception, variable: str) -> Check:
    return Check(
        FAIL,
        "model endpoint",
        f"{url} does not answer ({type(exc).__name__}: {exc})",
        f"start the server, or point {variable} at it",
    )


def _get(client: httpx.Client, url: str, **kwargs: Any) -> httpx.Response:
    return client.get(url, timeout=TIMEOUT, **kwargs)


def check_openai(model_id: str) -> list[Check]:
    base = (os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT).rstrip("/")
    key = os.environ.get("OPENAI_API_KEY")
    if not key:
        # The client refuses to start without one; a server that ignores keys still needs some value.
        return [
            Check(
                FAIL,
                "model key",
                "OPENAI_API_KEY is not set",
                "export OPENAI_API_KEY (deployed: the SSM SecureString ModelApiKeyParameterName names)",
            )
        ]
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(headers=headers) as client:
        try:
            listed = _get(client, f"{base}/models")
        except UNREACHABLE as exc:
            return [_unreachable(base, exc, "OPENAI_BASE_URL (ModelBaseUrl when deployed)")]
        if listed.status_code in (401, 403):
            return [
                Check(PASS, "model endpoint", f"{base} answers"),
                Check(
                    FAIL,
                    "model key",
                    f"the endpoint refused the key (HTTP {listed.status_code}: {_said(listed)})",
                    "check OPENAI_API_KEY (deployed: the SSM SecureString ModelApiKeyParameterName names)",
                ),
            ]
        checks = [Check(PASS, "model endpoint", f"{base} answers"), Check(PASS, "model key", "accepted")]
        checks.append(_listed_openai(listed, model_id))
        if checks[-1].status == FAIL:
            return checks
        checks.append(_answers_openai(client, base, model_id))
    return checks


def _said(response: httpx.Response) -> str:
    """What an error response says, in one short line (an OpenAI-style ``error.message`` when there is one)."""
    try:
        body = response.json()
        error = body.get("error") if isinstance(body, dict) else None
        text = error.get("message") if isinstance(error, dict) else (error or body)
    except ValueError:
        text = response.text
    return " ".join(str(text).split())[:200]


def _listed_openai(listed: httpx.Response, model_id: str) -> Check:
    if listed.status_code == 404:  # not every OpenAI-compatible server lists its models: the chat call will say
        return Check(WARN, "model exists", "the endpoint lists no models (GET /models: 404)")
    if listed.status_code != 200:
        return Check(FAIL, "model exists", f"GET /models: HTTP {listed.status_code}: {_said(listed)}", "")
    try:
        served = sorted(str(m.get("id")) for m in listed.json().get("data", []))
    except (ValueError, AttributeError):
        return Check(WARN, "model exists", "GET /models answered something other than a model list")
    if model_id in served:
        return Check(PASS, "model exists", f"{model_id} is served")
    return Check(
        FAIL,
        "model exists",
        f"{model_id} is not among the {len(served)} model(s) served: {', '.join(served[:10]) or 'none'}",
        "choose one of them: --model openai:<id> (ResponderModel when deployed)",
    )


def _answers_openai(client: httpx.Client, base: str, model_id: str) -> Check:
    started = time.monotonic()
    request = {"model": model_id, "messages": [{"role": "user", "content": "Reply with the word OK."}]}
    try:
        answered = client.post(f"{base}/chat/completions", json=request | {"max_tokens": 10}, timeout=TIMEOUT)
    except UNREACHABLE as exc:
        return Check(FAIL, "model answers", f"{type(exc).__name__}: {exc}", "check that the server is serving models")
    if answered.status_code != 200:
        fix = "choose a model the endpoint serves" if answered.status_code == 404 else "see what the endpoint said"
        return Check(FAIL, "model answers", f"HTTP {answered.status_code}: {_said(answered)}", fix)
    try:
        usage = answered.json().get("usage") or {}
    except (ValueError, AttributeError):
        usage = {}
    took = int((time.monotonic() - started) * 1000)
    return Check(
        PASS,
        "model answers",
        f"{took} ms, {usage.get('prompt_tokens', 0)} tokens in, {usage.get('completion_tokens', 0)} out ({base})",
    )


def ollama_host() -> str:
    """OLLAMA_HOST as Ollama's own clients read it: a bare ``host:port`` is plain HTTP."""
    host = (os.environ.get("OLLAMA_HOST") or OLLAMA_DEFAULT).rstrip("/")
    return host if "://" in host else f"http://{host}"


def check_ollama(model_id: str) -> list[Check]:
    host = ollama_host()
    try:
        with httpx.Client() as client:
            tags = _get(client, f"{host}/api/tags")
    except UNREACHABLE as exc:
        return [_unreachable(host, exc, "OLLAMA_HOST")]
    if tags.status_code != 200:
        return [
            Check(
                FAIL,
                "model endpoint",
                f"{host}/api/tags: HTTP {tags.status_code}: {_said(tags)}",
                "is OLLAMA_HOST an Ollama server?",
            )
        ]
    try:
        models = tags.json().get("models", [])
        pulled = sorted({str(m.get("name") or m.get("model")) for m in models})
    except (ValueError, AttributeError):
        return [Check(FAIL, "model endpoint", f"{host}/api/tags answered no model list", "is OLLAMA_HOST Ollama?")]
    checks = [Check(PASS, "model endpoint", f"{host} answers (Ollama needs no key)")]
    # Ollama names a model without a tag as its ``:latest``.
    if model_id in pulled or f"{model_id}:latest" in pulled:
        checks.append(Check(PASS, "model exists", f"{model_id} is pulled"))
    else:
        checks.append(
            Check(
                FAIL,
                "model exists",
                f"{model_id} is not pulled here ({', '.join(pulled[:10]) or 'no model is'})",
                f"ollama pull {model_id}",
            )
        )
    return checks
