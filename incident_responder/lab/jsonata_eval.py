"""JSONata for moto's Step Functions interpreter, without re-parsing the execution's data at every step.

moto (a port of LocalStack's interpreter) hands the evaluator one string per expression: the state's
expression with every variable it reads declared in front as a JSON literal,
``($states:={"input":{...}};$incident:="...";<expression>)``, and again wrapped in ``$exists(...)`` or
``$type(...)`` to validate the result. jsonata-python's parser, written in Python, then parses the whole
execution's data three times per expression: in the lab that was an eighth of all the CPU an incident cost.

:func:`evaluate` splits such a string back into its bindings and its expression, evaluates the expression
(parsed once, kept in a pool: a parsed ``Jsonata`` binds ``$`` on itself, so one object serves one thread at a
time) with the bindings passed as values, and falls back to parsing the whole string whenever the split is not
exact (a declaration that is not plain JSON, such as an intrinsic function's, or a string that does not read
back identically). Same result either way: tests compare the two.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import jsonata
from jsonata.utils import Utils

_DECLARATION = re.compile(r"\$([A-Za-z0-9_]+):=")
_WRAPPERS = ("$exists(", "$type(")
_DECODER = json.JSONDecoder()
_pool: dict[str, list[jsonata.Jsonata]] = {}
_pool_lock = threading.Lock()


def evaluate(rich_expression: str) -> Any:
    """The value of one of moto's composed expressions (what ``Jsonata(rich_expression).evaluate(None)`` gives)."""
    split = split_declarations(rich_expression)
    if split is None:
        return jsonata.Jsonata(rich_expression).evaluate(None)
    expression, bindings = split
    return _evaluate_pooled(expression, bindings)


def split_declarations(rich_expression: str) -> tuple[str, dict[str, Any]] | None:
    """``(expression-with-wrapper, bindings)`` for ``[wrapper(](decl;...expression)[)]``, or None if not exact."""
    wrapper, body = "", rich_expression
    for candidate in _WRAPPERS:
        if body.startswith(candidate) and body.endswith(")"):
            wrapper, body = candidate, body[len(candidate) : -1]
            break
    if not (body.startswith("(") and body.endswith(")")):
        return None
    bindings: dict[str, Any] = {}
    position = 1
    while match := _DECLARATION.match(body, position):
        value_at = match.end()
        try:
            value, end = _DECODER.raw_decode(body, value_at)
        except ValueError:
            return None  # a function declaration (intrinsics) or some other non-JSON value
        literal = body[value_at:end]
        # Strings are declared as JSON literals (moto_patches/stepfunctions._declare_strings_escaped) or, by moto alone, unescaped
        # ('"' + value + '"'): only exact when they read back one of those ways.
        if isinstance(value, str) and literal not in (json.dumps(value), f'"{value}"'):
            return None
        if end >= len(body) or body[end] != ";":
            return None
        bindings[match.group(1)] = _jsonata_nulls(value)
        position = end + 1
    expression = body[position:-1]
    if not expression:
        return None
    return f"{wrapper}({expression}){')' if wrapper else ''}", bindings


def _evaluate_pooled(expression: str, bindings: dict[str, Any]) -> Any:
    with _pool_lock:
        free = _pool.setdefault(expression, [])
        parsed = free.pop() if free else None
    if parsed is None:
        parsed = jsonata.Jsonata(expression)
    try:
        return parsed.evaluate(None, bindings)
    finally:
        with _pool_lock:
            _pool[expression].append(parsed)


def _jsonata_nulls(value: Any) -> Any:
    """JSON null as jsonata-python represents a null literal (a bare None is 'undefined' to it)."""
    if value is None:
        return Utils.NULL_VALUE
    if isinstance(value, dict):
        return {key: _jsonata_nulls(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_jsonata_nulls(item) for item in value]
    return value
