"""moto's Step Functions interpreter, completed for the lab.

moto runs the real ASL (a port of LocalStack's interpreter) but leaves gaps this module fills,
in the process that hosts the moto server:

* JSONata: moto parses it but ships no evaluator; :func:`install_jsonata` wires in jsonata-python
  (jsonata_eval.py: the expression parsed once, the execution's data passed as bindings).
* SendTaskFailure: moto's request handler drops the ``cause``, which the ASL reads for a rejection's
  reason; :func:`install_jsonata` also passes it through, as AWS does.
* Lambda tasks: moto's Docker-less Lambda only echoes. :class:`LambdaDispatcher` routes each task to
  the in-process handler registered for that function name, with the function's environment, and
  reports an exception as the Python runtime does (``FunctionError: Unhandled``, ``errorType`` =
  the class name), so ``ErrorEquals`` sees the handler's exception class.

Known differences from AWS (stated in the README): a timed-out handler is not killed (its thread
finishes in the background); retry backoff sleeps for real unless :func:`instant_retries` is used.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

Handler = Callable[[dict[str, Any], Any], Any]
_ENV_LOCK = threading.RLock()  # handlers read os.environ; one function's environment at a time


def restore_environment(saved: dict[str, str]) -> None:
    """Put os.environ back to ``saved`` one variable at a time. Never by clearing it first: other threads of
    the lab's process (moto's Task states read ``MOTO_PORT`` for every task) would see it empty meanwhile."""
    for key in [key for key in os.environ if key not in saved]:
        os.environ.pop(key, None)
    for key, value in saved.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


def install_jsonata() -> None:
    from moto.stepfunctions.parser.asl.jsonata import jsonata as moto_jsonata

    from incident_responder.lab.jsonata_eval import evaluate

    # moto's own eval_jsonata_expression calls this module global (the modules that imported the function
    # by name call it too); the attribute is replaced as well for any caller that looks it up late.
    moto_jsonata._eval_jsonata = evaluate
    moto_jsonata.eval_jsonata_expression = evaluate
    logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)
    _declare_strings_escaped()
    _pass_task_failure_cause()
    _parse_each_definition_once()
    _reuse_task_clients()
    _announce_execution_changes()


def _declare_strings_escaped() -> None:
    """moto declares each variable an expression reads as ``$name:=<literal>;``, a string as ``'"' + value + '"'``
    unescaped: a value holding a double quote or a backslash (AWS error texts quote names) then broke every
    expression reading it, so the state failed (a status write, the operator alarm). Step Functions itself reads
    such values fine, so the lab declares strings as JSON string literals, which JSONata reads the same way."""
    from moto.stepfunctions.parser.asl.eval import states, variable_store
    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

    def escaped(bindings: dict[str, Any]) -> str:
        return "".join(f"{name}:={to_json_str(value, separators=(',', ':'))};" for name, value in bindings.items())

    # The two modules that build declarations imported the function by name.
    states.encode_jsonata_variable_declarations = escaped
    variable_store.encode_jsonata_variable_declarations = escaped


def _reuse_task_clients() -> None:
    """moto's Task states (DynamoDB, SNS, SQS, Lambda ...) create a new boto3 client for every task they run,
    ~10 ms of the lab process's CPU each; clients are thread-safe, so one per region and service serves all
    (a state that names its own credentials still gets a client of its own)."""
    import sys

    from moto.stepfunctions.parser.asl.utils import boto_client

    create = getattr(boto_client.boto_client_for, "_lab_creates", boto_client.boto_client_for)
    clients: dict[tuple[str, str, str], Any] = {}
    lock = threading.Lock()

    def reused(region: str, service: str, state_credentials: Any = None) -> Any:
        if state_credentials is not None:
            return create(region, service, state_credentials)
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


class Changes:
    """Counts of changes in the lab's moto that waiters sleep on, instead of asking moto again and again:
    ``execution`` (an execution's history grew or it ended) and ``table`` (a DynamoDB write, an incident's
    status among them; server.py bumps it)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._counts: dict[str, int] = {}

    def bump(self, kind: str) -> None:
        with self._changed:
            self._counts[kind] = self._counts.get(kind, 0) + 1
            self._changed.notify_all()

    def seen(self, *kinds: str) -> tuple[int, ...]:
        with self._changed:
            return tuple(self._counts.get(kind, 0) for kind in kinds)

    def wait(self, seen: tuple[int, ...], *kinds: str, timeout: float) -> tuple[int, ...]:
        """The counts of ``kinds`` once one differs from ``seen``, or after ``timeout`` seconds."""
        with self._changed:
            self._changed.wait_for(lambda: self.seen(*kinds) != seen, timeout=max(0.0, timeout))
            return self.seen(*kinds)


LAB_CHANGES = Changes()
# How long a waiter sleeps without news before it looks anyway: moto may run in another process (a lab
# started by `responder lab up`), where no change reaches this one.
UNANNOUNCED_LOOK_SECONDS = 0.5


def _announce_execution_changes() -> None:
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
    from moto.core.responses import EmptyResult
    from moto.stepfunctions.responses import StepFunctionResponse

    def send_task_failure(self: Any) -> Any:
        self.stepfunction_backend.send_task_failure(
            self._get_param("taskToken"), error=self._get_param("error"), cause=self._get_param("cause")
        )
        return EmptyResult()

    StepFunctionResponse.send_task_failure = send_task_failure


@dataclass
class LambdaContext:
    """What a Python Lambda handler's ``context`` offers, for in-process calls."""

    function_name: str
    timeout_seconds: int = 900
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    invoked_function_arn: str = ""
    _deadline: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_seconds
        if not self.invoked_function_arn:
            self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


@dataclass
class RegisteredFunction:
    handler: Handler
    environment: dict[str, str] = field(default_factory=dict)
    timeout_seconds: int = 900
    memory_mb: int = 1024
    dead_letter_arn: str | None = None  # where a failed asynchronous invocation goes (DeadLetterConfig)
    invocations: int = 0
    handler_path: str | None = None  # "module.attribute": what a worker process imports
    max_workers: int | None = None  # the function's reserved concurrency, if it has one
    pool: Any = None  # its execution environments (workers.WorkerPool), made on first use


class LambdaDispatcher:
    """Routes Step Functions Lambda tasks (and direct invokes through :meth:`invoke`) to Python handlers.

    ``workers=True``: each function that names its handler runs in worker processes of its own (workers.py),
    as Lambda runs execution environments, in parallel. ``workers=False``: handlers are called in this process,
    one at a time (each needs its own ``os.environ``): what tests that replace a handler's internals need.
    """

    def __init__(self, workers: bool = False) -> None:
        self.functions: dict[str, RegisteredFunction] = {}
        self.workers = workers
        # What a worker may ask the lab's process to run for it (workers.host_call).
        self.host_functions: dict[str, Callable[..., Any]] = {}
        self._original: Any = None

    def register(
        self,
        name: str,
        handler: Handler,
        environment: dict[str, str] | None = None,
        timeout_seconds: int = 900,
        memory_mb: int = 1024,
        dead_letter_arn: str | None = None,
        handler_path: str | None = None,
        max_workers: int | None = None,
    ) -> None:
        replaced = self.functions.get(name)
        if replaced is not None and replaced.pool is not None:
            replaced.pool.close()  # a redeployed function starts from new environments
        self.functions[name] = RegisteredFunction(
            handler,
            dict(environment or {}),
            timeout_seconds,
            memory_mb,
            dead_letter_arn,
            handler_path=handler_path,
            max_workers=max_workers,
        )

    def invoke(self, name: str, event: dict[str, Any]) -> Any:
        """Call a registered handler as Lambda would: its environment applied, a context given."""
        function = self.functions[name]
        function.invocations += 1
        context = LambdaContext(name, function.timeout_seconds, function.memory_mb)
        if self.workers and function.handler_path:
            return self._pool(name, function).invoke(event, context.aws_request_id)
        with _ENV_LOCK:
            saved = dict(os.environ)
            os.environ.update(function.environment)
            try:
                return function.handler(event, context)
            finally:
                restore_environment(saved)

    def _pool(self, name: str, function: RegisteredFunction) -> Any:
        with _ENV_LOCK:
            if function.pool is None:
                from incident_responder.lab.workers import DEFAULT_MAX_WORKERS, WorkerPool

                function.pool = WorkerPool(
                    name,
                    str(function.handler_path),
                    # What an in-process call sees (the lab's environment), with the function's own on top.
                    {**os.environ, **function.environment},
                    function.timeout_seconds,
                    function.memory_mb,
                    self.host_functions,
                    max_workers=min(function.max_workers or DEFAULT_MAX_WORKERS, DEFAULT_MAX_WORKERS),
                )
            return function.pool

    def retire(self, names: Iterable[str]) -> None:
        """Forget functions a redeploy replaced (moto names them anew) and stop their execution environments."""
        for name in names:
            function = self.functions.pop(name, None)
            if function is not None and function.pool is not None:
                function.pool.close()

    def cold_starts(self) -> dict[str, list[float]]:
        """Each function's worker start times (ms) so far."""
        return {name: list(f.pool.cold_starts) for name, f in self.functions.items() if f.pool is not None}

    def close(self) -> None:
        """Stop every worker process."""
        for function in self.functions.values():
            if function.pool is not None:
                function.pool.close()
                function.pool = None

    def _dispatch(self, parameters: dict[str, Any], region: str, state_credentials: Any) -> dict[str, Any]:
        target = str(parameters["FunctionName"])
        name, _ = invoked_function(target)  # an alias's qualifier names a version of the same handler
        if name not in self.functions:
            return self._original(parameters=parameters, region=region, state_credentials=state_credentials)
        raw = parameters.get("Payload")
        event = json.loads(raw) if raw else {}
        try:
            result = self.invoke(name, event)
        except Exception as exc:  # the Python runtime's "Unhandled" error envelope
            return {
                "StatusCode": 200,
                "FunctionError": "Unhandled",
                "Payload": {
                    # From a worker: the handler's own error type, as the runtime reports it.
                    "errorType": getattr(exc, "error_type", type(exc).__name__),
                    "errorMessage": str(exc),
                    "stackTrace": getattr(exc, "stack", None) or traceback.format_tb(exc.__traceback__),
                },
            }
        return {"StatusCode": 200, "Payload": json.loads(json.dumps(result, default=str))}

    def deliver_async(
        self, name: str, event: dict[str, Any], dead_letter: Callable[[dict[str, Any], Exception], None]
    ) -> None:
        """An asynchronous invocation (SNS, EventBridge): two retries, then the dead-letter target."""
        error: Exception | None = None
        for _ in range(3):
            try:
                self.invoke(name, event)
                return
            except Exception as exc:  # noqa: BLE001 - Lambda retries any failure of an async invoke
                error = exc
        assert error is not None
        dead_letter(event, error)

    def invoke_async(self, name: str, event: dict[str, Any]) -> None:
        """As Lambda runs an asynchronous invocation (SNS, EventBridge): two retries, then the function's own
        dead-letter target."""
        target = self.functions[name].dead_letter_arn
        self.deliver_async(name, event, lambda evt, exc: _to_dead_letter(target, evt, exc))

    def install(self) -> LambdaDispatcher:
        from moto.awslambda_simple.models import LambdaSimpleBackend
        from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

        if self._original is None:
            self._original = lambda_eval_utils._invoke_lambda_function
            self._original_sns = LambdaSimpleBackend.send_sns_message
        lambda_eval_utils._invoke_lambda_function = self._dispatch
        dispatcher = self

        def send_sns_message(
            backend: Any, function_name: str, message: str, subject: str | None = None, qualifier: str | None = None
        ) -> None:
            name, _ = invoked_function(function_name)
            if name not in dispatcher.functions:
                return dispatcher._original_sns(backend, function_name, message, subject=subject, qualifier=qualifier)
            dispatcher.invoke_async(name, sns_event(message, subject, backend.region_name, backend.account_id))
            return None

        LambdaSimpleBackend.send_sns_message = send_sns_message
        return self

    def uninstall(self) -> None:
        self.close()
        from moto.awslambda_simple.models import LambdaSimpleBackend
        from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

        if self._original is not None:
            lambda_eval_utils._invoke_lambda_function = self._original
            LambdaSimpleBackend.send_sns_message = self._original_sns


def sns_event(message: str, subject: str | None, region: str, account: str) -> dict[str, Any]:
    """The event Lambda receives from an SNS subscription."""
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    topic = f"arn:aws:sns:{region}:{account}:incident-alerts"
    return {
        "Records": [
            {
                "EventVersion": "1.0",
                "EventSubscriptionArn": f"{topic}:{uuid.uuid4()}",
                "EventSource": "aws:sns",
                "Sns": {
                    "SignatureVersion": "1",
                    "Timestamp": now,
                    "Signature": "EXAMPLE",
                    "SigningCertUrl": "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0000.pem",
                    "MessageId": str(uuid.uuid4()),
                    "Message": message,
                    "MessageAttributes": {},
                    "Type": "Notification",
                    "UnsubscribeUrl": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
                    "TopicArn": topic,
                    "Subject": subject,
                },
            }
        ]
    }


def _to_dead_letter(target_arn: str | None, event: dict[str, Any], error: Exception) -> None:
    """Lambda's own dead-letter queue for a failed asynchronous invocation (lab: SQS targets)."""
    if not target_arn or ":sqs:" not in target_arn:
        logging.getLogger(__name__).error("async invocation failed and no dead-letter queue is configured: %s", error)
        return
    import boto3

    _, _, _, region, account, queue = target_arn.split(":")
    sqs = boto3.client("sqs", region_name=region)
    sqs.send_message(
        QueueUrl=sqs.get_queue_url(QueueName=queue, QueueOwnerAWSAccountId=account)["QueueUrl"],
        MessageBody=json.dumps(event),
        MessageAttributes={
            "ErrorMessage": {"DataType": "String", "StringValue": str(error)[:1000] or type(error).__name__}
        },
    )


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


def invoked_function(target: str) -> tuple[str, str | None]:
    """(name, qualifier) of a FunctionName as Lambda's Invoke takes it: ``name``, ``name:qualifier``, a partial ARN
    ``account:function:name[:qualifier]`` or an ARN ``arn:aws:lambda:region:account:function:name[:qualifier]``."""
    parts = target.split(":")
    if parts[0] == "arn":
        parts = parts[6:]
    elif len(parts) > 2 and parts[1] == "function":
        parts = parts[2:]
    return parts[0], (parts[1] if len(parts) > 1 and parts[1] else None)


def substitute(definition: str, substitutions: dict[str, Any]) -> str:
    """``${Name}`` placeholders replaced, as CloudFormation's DefinitionSubstitutions do (moto ignores them)."""
    for key, value in substitutions.items():
        definition = definition.replace("${" + key + "}", str(value))
    return definition


def wait_for_execution(sfn: Any, execution_arn: str, timeout: float = 60.0) -> dict[str, Any]:
    """The execution once it ended (or at ``timeout``): asks moto again only when an execution changed."""
    deadline = time.monotonic() + timeout
    seen = LAB_CHANGES.seen("execution")
    while True:
        described = sfn.describe_execution(executionArn=execution_arn)
        left = deadline - time.monotonic()
        if described["status"] != "RUNNING" or left <= 0:
            return described
        seen = LAB_CHANGES.wait(seen, "execution", timeout=min(left, UNANNOUNCED_LOOK_SECONDS))
