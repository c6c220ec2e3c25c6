"""Secrets out of text before a model, a store or a page sees it: deterministic, marked, counted.

    redactor = default_redactor()              # the built-in shapes and REDACTION_PATTERNS
    text = redactor.text(line)                 # 'password=[REDACTED:secret-value]'
    value, counts = redactor.value(result)     # every string in a JSON value; counts by kind

A secret becomes ``[REDACTED:<kind>]``, the same for the same input, so evidence that points at a redacted value
still verifies against the redacted output, and a second pass changes nothing. Where it is applied: every result
(and error) leaving an MCP server (:mod:`incident_responder.mcp_transport.app`), the log lines the log reader folds
(before it cuts them: a cut secret would no longer match), and the alert's own text at intake.
"""

from __future__ import annotations

import functools
import json
import os
from collections import Counter
from dataclasses import dataclass
from typing import Any

from incident_responder.redaction.patterns import MARKER, MARKER_RE, SHAPES, Shape, custom_shape

# The env var a deployment sets (the RedactionPatterns parameter): a JSON object, kind -> regular expression.
PATTERNS_VARIABLE = "REDACTION_PATTERNS"
# Nothing shorter holds a secret any shape takes (an 8-character bearer token after its scheme).
SHORTEST = 8


class RedactionConfigError(ValueError):
    """REDACTION_PATTERNS is not a JSON object of kinds to valid regular expressions."""


@dataclass(frozen=True)
class Redactor:
    shapes: tuple[Shape, ...] = SHAPES

    def text(self, text: str) -> str:
        """``text`` with every secret replaced by its marker."""
        if len(text) < SHORTEST:
            return text
        for shape in self.shapes:
            if shape.regex.search(text) is None:
                continue
            text = shape.regex.sub(functools.partial(_replace, shape), text)
        return text

    def value(self, value: Any) -> tuple[Any, dict[str, int]]:
        """Every string in a JSON value (dict keys too) redacted, and how many markers it holds by kind (those a
        reader upstream wrote included, so a log line redacted before it was cut still counts)."""
        counts: Counter[str] = Counter()

        def walk(node: Any) -> Any:
            if isinstance(node, str):
                redacted = self.text(node)
                if "[REDACTED:" in redacted:
                    counts.update(MARKER_RE.findall(redacted))
                return redacted
            if isinstance(node, dict):
                return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in node.items()}
            if isinstance(node, list | tuple):
                return [walk(v) for v in node]
            return node

        return walk(value), dict(sorted(counts.items()))


def _replace(shape: Shape, match: Any) -> str:
    secret = match.group(shape.group)
    if secret is None or (shape.check is not None and not shape.check(secret)):
        return match.group(0)
    start, end = match.span(shape.group)
    whole_start = match.start(0)
    whole = match.group(0)
    return whole[: start - whole_start] + MARKER.format(kind=shape.kind) + whole[end - whole_start :]


def parse_patterns(raw: str | None) -> tuple[Shape, ...]:
    """A deployment's own shapes from REDACTION_PATTERNS (``{"kind": "regex", ...}``; empty: none)."""
    if not raw or not raw.strip():
        return ()
    try:
        found = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise RedactionConfigError(
            f"{PATTERNS_VARIABLE} is not JSON ({exc.msg}): give an object of kind -> regex"
        ) from None
    if not isinstance(found, dict) or not all(isinstance(v, str) for v in found.values()):
        raise RedactionConfigError(
            f'{PATTERNS_VARIABLE} must be a JSON object of kind -> regex, e.g. {{"order-token": "ord_[a-z0-9]{{24}}"}}'
        )
    try:
        return tuple(custom_shape(kind, pattern) for kind, pattern in found.items())
    except ValueError as exc:
        raise RedactionConfigError(f"{PATTERNS_VARIABLE}: {exc}") from None


@functools.cache
def _redactor(raw: str | None) -> Redactor:
    # A deployment's shapes first: what it names as its own is counted as its own.
    return Redactor(parse_patterns(raw) + SHAPES)


def default_redactor() -> Redactor:
    """The built-in shapes and this process's REDACTION_PATTERNS (raises RedactionConfigError when it is invalid)."""
    return _redactor(os.environ.get(PATTERNS_VARIABLE))
