"""RUNNING the state machine: moto's Step Functions interpreter, completed for the lab.

moto runs the real ASL (a port of LocalStack's interpreter) but leaves gaps this module fills,
in the process that hosts the moto server:

* JSONata: moto parses it but ships no evaluator; :func:`install_jsonata` wires in jsonata-python
  (jsonata_eval.py: the expression parsed once, the execution's data passed as bindings).
* SendTaskFailure: moto's request handler drops the ``cause``, which the ASL reads for a rejection's
  reason; :func:`_pass_task_failure_cause` passes it through, as AWS does.
* Lambda tasks: moto's Docker-less Lambda only echoes: :func:`route_lambda_tasks` hands them to the lab's
  dispatcher (engine.py).

Retry backoff sleeps for real unless :func:`instant_retries` is used.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from incident_responder.lab.changes import LAB_CHANGES


def install_jsonata() -> None:
    """JSONata: moto parses it but ships no evaluator: jsonata-python's, through jsonata_eval.py."""
    from moto.stepfunctions.parser.asl.jsonata import jsonata as moto_jsonata

    from incident_responder.lab.jsonata_eval import evaluate

    # moto's own eval_jsonata_expression calls this module global (the modules that imported the function
    # by name call it too); the attribute is replaced as well for any caller that looks it up late.
    moto_jsonata._eval_jsonata = evaluate
    moto_jsonata.eval_jsonata_expression = evaluate
    logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)


def _declare_strings_escaped() -> None:
    """moto declares each variable an expression reads as ``$name:=<literal>;``, a string as ``'"' + value + '"'``
    unescaped: a value holding a double quote or a backslash (AWS error texts quote names) then broke every
    expression reading it, so the state failed (a status write, the operator alarm). Step Functions itself reads
    such values fine, so the lab declares strings as JSON string literals, which JSONata reads the same way."""
    from moto.stepfunctions.parser.asl.eval import states, variable_store
    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

    if getattr(states.encode_jsonata_variable_declarations, "lab_escaped", False):
        return

    def escaped(bindings: dict[str, Any]) -> str:
        return "".join(f"{name}:={to_json_str(value, separators=(',', ':'))};" for name, value in bindings.items())

    escaped.lab_escaped = True  # type: ignore[attr-defined]
    # The two modules that build declarations imported the function by name.
    states.encode_jsonata_variable_declarations = escaped
    variable_store.encode_jsonata_variable_declarations = escaped


def _reuse_task_clients() -> None:
    """moto's Task states (DynamoDB, SNS, SQS, Lambda ...) create a new boto3 client for every task they run,
    ~10 ms of the lab process's CPU each; clients are thread-safe, so one per region and service serves all. Every
    Task state passes its credentials (the execution's role, by default), and moto's client signs with the same
    dummy key whatever they are, so they make no client of their own."""
    import sys

    from moto.stepfunctions.parser.asl.utils import boto_client

    if hasattr(boto_client.boto_client_for, "_lab_creates"):
        return
    create = getattr(boto_client.boto_client_for, "_lab_creates", boto_client.boto_client_for)
    clients: dict[tuple[str, str, str], Any] = {}
    lock = threading.Lock()

    def reused(region: str, service: str, state_credentials: Any = None) -> Any:
        from moto.settings import moto_server_port

        key = (region, service, moto_server_port())
        with lock:
            if key not in clients:
                clients[key] = create(region, service)
            return clients[key]

    reused._lab_creates = create  # type: ignore[attr-defined]
    boto_client.boto_client_for = reused
    for name, module in list(sys.modules.items()):  # the modules that imported it by name
        if name.startswith("moto.stepfunctions.parser") and getattr(module, "boto_client_for", None) is create:
            module.boto_client_for = reused


_programs: dict[str, Any] = {}
_programs_lock = threading.Lock()


def _program(definition: str) -> Any:
    """The definition parsed by moto's ANTLR parser, once per definition (~0.4 s of CPU each time, in the lab's
    process, which runs every execution). A definition that fails to parse raises and is not kept."""
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    with _programs_lock:
        program = _programs.get(definition)
    if program is None:
        program = AmazonStateLanguageParser.parse(definition)[0]
        with _programs_lock:
            program = _programs.setdefault(definition, program)
    return program


def _parse_each_definition_once() -> None:
    """moto parsed a definition to validate it at every (re)deploy, and again for every execution: both use
    :func:`_program`. A parsed program keeps no state of an execution (that lives in each execution's
    Environment), except the Map state's iteration pools: a definition with a Map or Parallel state is parsed
    per execution, as moto does. Validation errors still come from moto's own validator."""
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    if getattr(ExecutionWorker._get_evaluation_entrypoint, "lab_cached", False):
        return
    validate = StepFunctionsParserBackend.__dict__["_validate_definition"].__func__

    def validate_once(definition: str) -> None:
        try:
            _program(definition)
        except Exception:  # noqa: BLE001 - moto's validator reports it (InvalidDefinition), as the API does
            validate(definition=definition)
            raise

    def entrypoint(self: Any) -> Any:
        definition = self._evaluation_details.state_machine_details.definition
        if '"Map"' in definition or '"Parallel"' in definition:
            return AmazonStateLanguageParser.parse(definition)[0]
        return _program(definition)

    entrypoint.lab_cached = True  # type: ignore[attr-defined]
    StepFunctionsParserBackend._validate_definition = staticmethod(validate_once)
    ExecutionWorker._get_evaluation_entrypoint = entrypoint


def _announce_execution_changes() -> None:
    """Each history event and each execution's end bump ``LAB_CHANGES["execution"]``: waiters look again."""
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager
    from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication

    if getattr(EventManager.add_event, "lab_announced", False):
        return
    add_event, terminated = EventManager.add_event, BaseExecutionWorkerCommunication.terminated

    def announced_add_event(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return add_event(self, *args, **kwargs)
        finally:
            LAB_CHANGES.bump("execution")

    def announced_terminated(self: Any) -> None:
        try:
            terminated(self)
        finally:
            LAB_CHANGES.bump("execution")

    announced_add_event.lab_announced = True  # type: ignore[attr-defined]
    EventManager.add_event = announced_add_event
    BaseExecutionWorkerCommunication.terminated = announced_terminated


def _pass_task_failure_cause() -> None:
    """SendTaskFailure: moto's request handler drops the ``cause``, which the ASL reads for a rejection's reason:
    passed through, as AWS does."""
    from moto.core.responses import EmptyResult
    from moto.stepfunctions.responses import StepFunctionResponse

    if getattr(StepFunctionResponse.send_task_failure, "lab_with_cause", False):
        return

    def send_task_failure(self: Any) -> Any:
        self.stepfunction_backend.send_task_failure(
            self._get_param("taskToken"), error=self._get_param("error"), cause=self._get_param("cause")
        )
        return EmptyResult()

    send_task_failure.lab_with_cause = True  # type: ignore[attr-defined]
    StepFunctionResponse.send_task_failure = send_task_failure


def _history_without_data_when_asked() -> None:
    """GetExecutionHistory with ``includeExecutionData`` false: the events without their input and output, as Step
    Functions answers it. And the answer written as JSON directly: moto's serializer looks every member of the event
    shape (some 60) up on each of the 150-odd events, about 50 ms of the lab's CPU per history, for what is JSON
    already (timestamps aside, written as its serializer writes them)."""
    from moto.stepfunctions.responses import StepFunctionResponse

    original = StepFunctionResponse.get_execution_history
    if getattr(original, "lab_without_data", False):
        return

    def get_execution_history(self: Any) -> Any:
        history = self.stepfunction_backend.get_execution_history(self._get_param("executionArn"))
        events = history["events"]
        if self._get_param("includeExecutionData") is False:
            events = [
                {
                    key: {k: v for k, v in value.items() if k not in _EXECUTION_DATA}
                    if key.endswith("Details")
                    else value
                    for key, value in event.items()
                }
                for event in events
            ]
        body = json.dumps({"events": _without_none(events)}, default=_json_value, separators=(",", ":"))
        return 200, {"Content-Type": "application/x-amz-json-1.0"}, body

    get_execution_history.lab_without_data = True  # type: ignore[attr-defined]
    get_execution_history.lab_original = original  # type: ignore[attr-defined]
    StepFunctionResponse.get_execution_history = get_execution_history


def _without_none(value: Any) -> Any:
    """What moto's serializer leaves out: members whose value is None."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def _json_value(value: Any) -> Any:
    """A timestamp as moto's JSON serializer writes it (epoch seconds, to the millisecond); an enumeration's value."""
    from datetime import datetime
    from enum import Enum

    from moto.core.serialize import TimestampSerializer

    if isinstance(value, datetime):
        return TimestampSerializer._timestamp_unixtimestamp(value)
    if isinstance(value, Enum):
        return value.value
    raise TypeError(f"{type(value).__name__} in an execution's history")


_EXECUTION_DATA = frozenset({"input", "output", "inputDetails", "outputDetails"})


@contextmanager
def instant_retries() -> Iterator[list[float]]:
    """Retry backoff without the wait (tests); yields the delays that were asked for."""
    from types import SimpleNamespace

    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

    delays: list[float] = []
    original = retrier_decl.time
    retrier_decl.time = SimpleNamespace(sleep=delays.append)
    try:
        yield delays
    finally:
        retrier_decl.time = original


def route_lambda_tasks(invoke: Callable[..., Any]) -> Callable[..., Any]:
    """Step Functions' Lambda tasks call ``invoke`` (the lab's dispatcher) from now on; returns what they called."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

    before = lambda_eval_utils._invoke_lambda_function
    lambda_eval_utils._invoke_lambda_function = invoke
    return before
