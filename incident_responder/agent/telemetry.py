"""What each tool call and model call of an agent leaves behind: a structured log line and EMF metrics.

Log lines (the function's JSON log, through Powertools' Logger as a child of the handler's, so they carry the
keys the handler appended, e.g. ``incident_id``):

* ``tool_executed``: ``tool``, ``arguments``, ``duration_ms``, ``bytes`` (what the model was sent back),
  ``outcome`` (``ok`` | ``error``), ``error`` when it failed;
* ``model_called``: ``turn``, ``duration_ms``, ``input_tokens``, ``output_tokens``, ``outcome`` (``ok`` | ``error`` |
  ``timeout``: cut at the agent's deadline).

Metrics (CloudWatch embedded metric format, the functions' namespace ``POWERTOOLS_METRICS_NAMESPACE``), each
written at once with its own dimensions (Powertools' ``single_metric``): ``ToolDuration`` (ms; dimensions
``service``, ``tool``), ``ToolErrors`` (dimensions ``service``, ``tool``), ``ModelDuration`` (ms),
``ModelInputTokens``, ``ModelOutputTokens`` and ``ModelErrors`` (a call that raised or was cut at the deadline)
(dimension ``service``). Nothing is written where no namespace
is set or metrics are disabled (``POWERTOOLS_METRICS_DISABLED``, ``POWERTOOLS_DEV``), as Powertools' own Metrics.

X-Ray: where a segment can be written (:func:`incident_responder.core.tracing.tracing_enabled`), each call is a
subsegment of the handler's, ``## tool <name>`` or ``## model``, annotated with the tool's name or the turn.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from incident_responder.core.tracing import tracing_enabled

ARGUMENTS_LOGGED = 512  # characters of a call's arguments kept in its log line

_logger: Any = None


def _log() -> Any:
    # Made on first use: the lab's fork server imports this module before a function's environment (its
    # service name) is set.
    global _logger
    if _logger is None:
        from aws_lambda_powertools import Logger

        _logger = Logger(service=_service(), child=True)
    return _logger


def _service() -> str:
    return os.environ.get("POWERTOOLS_SERVICE_NAME", "incident-responder")


@asynccontextmanager
async def span(kind: str, name: str | None = None, **annotations: Any) -> AsyncIterator[None]:
    """An X-Ray subsegment around one tool call (``kind`` "tool") or model call ("model"); nothing elsewhere."""
    if not tracing_enabled():
        yield
        return
    from aws_xray_sdk.core import xray_recorder

    async with xray_recorder.in_subsegment_async(f"## {kind}" + (f" {name}" if name else "")) as subsegment:
        if subsegment is not None:
            for key, value in annotations.items():
                subsegment.put_annotation(key, value)
        yield


def _metrics_on() -> bool:
    # Powertools' own rule for its Metrics (single_metric does not apply it), and a namespace to write under.
    from aws_lambda_powertools.metrics.functions import is_metrics_disabled

    return bool(os.environ.get("POWERTOOLS_METRICS_NAMESPACE")) and not is_metrics_disabled()


def _metric(name: str, unit: str, value: float, dimensions: dict[str, str]) -> None:
    from aws_lambda_powertools.metrics import MetricUnit, single_metric

    with single_metric(name=name, unit=MetricUnit(unit), value=value, default_dimensions={"service": _service()}) as m:
        for key, text in dimensions.items():
            m.add_dimension(name=key, value=text)


def tool_executed(
    tool: str, arguments: Any, duration_ms: int, output_bytes: int, ok: bool, error: str | None = None
) -> None:
    """One tool call: logged, and ToolDuration (ToolErrors when it failed) by tool."""
    try:
        shown = json.dumps(arguments, default=str, sort_keys=True)
    except (TypeError, ValueError):
        shown = repr(arguments)
    fields: dict[str, Any] = {
        "tool": tool,
        "arguments": shown[:ARGUMENTS_LOGGED],
        "duration_ms": duration_ms,
        "bytes": output_bytes,
        "outcome": "ok" if ok else "error",
    }
    if error:
        fields["error"] = error[:500]
    _log().info("tool_executed", extra=fields)
    if _metrics_on():
        _metric("ToolDuration", "Milliseconds", duration_ms, {"tool": tool})
        if not ok:
            _metric("ToolErrors", "Count", 1, {"tool": tool})


def model_called(
    turn: int, duration_ms: int, input_tokens: int, output_tokens: int, ok: bool, timed_out: bool = False
) -> None:
    """One model call, answered or not: logged, and ModelDuration, ModelInputTokens, ModelOutputTokens (ModelErrors
    when it raised or timed out)."""
    _log().info(
        "model_called",
        extra={
            "turn": turn,
            "duration_ms": duration_ms,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "outcome": "ok" if ok else "timeout" if timed_out else "error",
        },
    )
    if _metrics_on():
        _metric("ModelDuration", "Milliseconds", duration_ms, {})
        _metric("ModelInputTokens", "Count", input_tokens, {})
        _metric("ModelOutputTokens", "Count", output_tokens, {})
        if not ok:
            _metric("ModelErrors", "Count", 1, {})
