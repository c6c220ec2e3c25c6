"""moto's Step Functions interpreter, completed for the lab.

moto runs the real ASL (a port of LocalStack's interpreter) but leaves gaps this module fills,
in the process that hosts the moto server:

* JSONata: moto parses it but ships no evaluator; :func:`install_jsonata` wires in jsonata-python.
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

Handler = Callable[[dict[str, Any], Any], Any]
_ENV_LOCK = threading.RLock()  # handlers read os.environ; one function's environment at a time


def install_jsonata() -> None:
    import jsonata
    from moto.stepfunctions.parser.asl.jsonata import jsonata as moto_jsonata

    moto_jsonata.eval_jsonata_expression = lambda expression: jsonata.Jsonata(expression).evaluate(None)
    logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)
    _pass_task_failure_cause()


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


class LambdaDispatcher:
    """Routes Step Functions Lambda tasks (and direct invokes through :meth:`invoke`) to Python handlers."""

    def __init__(self) -> None:
        self.functions: dict[str, RegisteredFunction] = {}
        self._original: Any = None

    def register(
        self,
        name: str,
        handler: Handler,
        environment: dict[str, str] | None = None,
        timeout_seconds: int = 900,
        memory_mb: int = 1024,
        dead_letter_arn: str | None = None,
    ) -> None:
        self.functions[name] = RegisteredFunction(
            handler, dict(environment or {}), timeout_seconds, memory_mb, dead_letter_arn
        )

    def invoke(self, name: str, event: dict[str, Any]) -> Any:
        """Call a registered handler as Lambda would: its environment applied, a context given."""
        function = self.functions[name]
        function.invocations += 1
        context = LambdaContext(name, function.timeout_seconds, function.memory_mb)
        with _ENV_LOCK:
            saved = dict(os.environ)
            os.environ.update(function.environment)
            try:
                return function.handler(event, context)
            finally:
                os.environ.clear()
                os.environ.update(saved)

    def _dispatch(self, parameters: dict[str, Any], region: str, state_credentials: Any) -> dict[str, Any]:
        target = str(parameters["FunctionName"])
        name = target.split(":")[6] if target.startswith("arn:") else target.split(":")[0]
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
                    "errorType": type(exc).__name__,
                    "errorMessage": str(exc),
                    "stackTrace": traceback.format_tb(exc.__traceback__),
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
            name = function_name.split(":")[6] if function_name.startswith("arn:") else function_name
            if name not in dispatcher.functions:
                return dispatcher._original_sns(backend, function_name, message, subject=subject, qualifier=qualifier)
            event = sns_event(message, subject, backend.region_name, backend.account_id)
            target = dispatcher.functions[name].dead_letter_arn
            dispatcher.deliver_async(name, event, lambda evt, exc: _to_dead_letter(target, evt, exc))
            return None

        LambdaSimpleBackend.send_sns_message = send_sns_message
        return self

    def uninstall(self) -> None:
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


def substitute(definition: str, substitutions: dict[str, Any]) -> str:
    """``${Name}`` placeholders replaced, as CloudFormation's DefinitionSubstitutions do (moto ignores them)."""
    for key, value in substitutions.items():
        definition = definition.replace("${" + key + "}", str(value))
    return definition


def wait_for_execution(sfn: Any, execution_arn: str, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        described = sfn.describe_execution(executionArn=execution_arn)
        if described["status"] != "RUNNING" or time.monotonic() > deadline:
            return described
        time.sleep(0.05)
