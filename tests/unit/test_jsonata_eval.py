"""The lab's JSONata evaluator gives what parsing moto's whole composed expression gives, much cheaper."""

from __future__ import annotations

import json

import jsonata
import pytest
from moto.stepfunctions.parser.asl.jsonata.jsonata import (
    compose_jsonata_expression,
    encode_jsonata_variable_declarations,
)

from incident_responder.lab.jsonata_eval import evaluate, split_declarations

STATES = {
    "input": {"incident": {"incident_id": "data-processor-1", "function_name": "data-processor", "retries": None}},
    "result": {"Payload": {"status": "DIAGNOSED", "fault_types": ["timeout", "throttling"], "count": 2.5}},
    "context": {"Execution": {"Name": "data-processor-1", "StartTime": "2026-11-23T10:00:00Z"}},
}
EXPRESSIONS = [
    "$states.input.incident.incident_id",
    "$states.result.Payload.fault_types[0]",
    "$count($states.result.Payload.fault_types)",
    "$states.input.incident.retries",
    "$states.input.incident.missing",
    '{"incident": $states.input.incident, "status": $states.result.Payload.status, "n": null}',
    "$incident_id & ':' & $states.context.Execution.Name",
    "$states.result.Payload.count * 2",
    '$exists($states.input.incident.retries) ? "set" : "unset"',
]


def composed(expression: str) -> str:
    declarations = [
        encode_jsonata_variable_declarations({"$states": STATES}),
        encode_jsonata_variable_declarations({"$incident_id": "data-processor-1"}),
    ]
    return compose_jsonata_expression(expression, declarations)


@pytest.mark.parametrize("expression", EXPRESSIONS)
@pytest.mark.parametrize("wrapper", ["", "$exists", "$type"])
def test_the_same_value_as_parsing_the_whole_expression(expression, wrapper):
    rich = composed(expression)
    if wrapper:
        rich = f"{wrapper}({rich})"
    assert split_declarations(rich) is not None  # the fast path is taken
    assert evaluate(rich) == jsonata.Jsonata(rich).evaluate(None)


def test_what_cannot_be_split_exactly_is_parsed_whole():
    function = "($f:=function($x){$x*2};$f(21))"  # a declaration that is not JSON (intrinsic functions)
    unescaped = '($s:="say "hi"";$s)'  # moto declares strings unescaped: this one is not valid JSON
    for rich in (function, unescaped):
        assert split_declarations(rich) is None
    assert evaluate(function) == 42


def test_strings_the_lab_declares_escaped_read_back_exactly():
    """The lab's engine declares strings as JSON literals (moto's own declaration broke on a quote)."""
    said = 'role "orders" \\ it\'s denied'
    rich = f"($s:={json.dumps(said)};$s & '!')"
    assert split_declarations(rich) is not None
    assert evaluate(rich) == jsonata.Jsonata(rich).evaluate(None) == said + "!"


def test_concurrent_evaluations_of_one_expression_keep_their_own_data():
    from concurrent.futures import ThreadPoolExecutor

    def run(i: int) -> object:
        rich = compose_jsonata_expression(
            "$states.input.n", [encode_jsonata_variable_declarations({"$states": {"input": {"n": i}}})]
        )
        return evaluate(rich)

    with ThreadPoolExecutor(8) as threads:
        assert list(threads.map(run, range(200))) == list(range(200))
