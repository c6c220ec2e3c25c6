"""RUNNING the state machine's Lambda tasks in the lab: each routed to the in-process handler of its function.

moto runs the real ASL (a port of LocalStack's interpreter); the gaps it leaves in the interpreter are filled
in moto_patches/stepfunctions.py. This module fills the last one:

* Lambda tasks: moto's Docker-less Lambda only echoes. :class:`LambdaDispatcher` routes each task to
  the in-process handler registered for that function name, with the function's environment, and
  reports an exception as the Python runtime does (``FunctionError: Unhandled``, ``errorType`` =
  the class name), so ``ErrorEquals`` sees the handler's exception class.

Known differences from AWS (stated in the README): a timed-out handler is not killed (its thread
finishes in the background); retry backoff sleeps for real unless moto_patches/stepfunctions.py's ``instant_retries`` is used.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from incident_responder.lab.changes import LAB_CHANGES, UNANNOUNCED_LOOK_SECONDS
from incident_responder.lab.lambda_context import LambdaContext
from incident_responder.lab.moto_patches.awslambda import route_sns_deliveries
from incident_responder.lab.moto_patches.stepfunctions import route_lambda_tasks

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
        dispatcher = self

        def send_sns_message(
            backend: Any, function_name: str, message: str, subject: str | None = None, qualifier: str | None = None
        ) -> None:
            name, _ = invoked_function(function_name)
            if name not in dispatcher.functions:
                return dispatcher._original_sns(backend, function_name, message, subject=subject, qualifier=qualifier)
            dispatcher.invoke_async(name, sns_event(message, subject, backend.region_name, backend.account_id))
            return None

        original = route_lambda_tasks(self._dispatch)
        original_sns = route_sns_deliveries(send_sns_message)
        if self._original is None:  # what moto called before the first install
            self._original, self._original_sns = original, original_sns
        return self

    def uninstall(self) -> None:
        self.close()
        if self._original is not None:
            route_lambda_tasks(self._original)
            route_sns_deliveries(self._original_sns)


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
