"""An AWS error that passes (throttled, a 5xx, an endpoint out of reach) reaches the state machine as
AwsTransientError, which every task running a handler retries; any other error keeps its own name."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

from incident_responder.core.aws import AwsTransientError, is_transient, retry_passing_aws_errors

ASL = json.loads((Path(__file__).parents[2] / "statemachine" / "incident_lifecycle.asl.json").read_text())
# The handlers the state machine's Task states invoke.
TASK_HANDLERS = [
    "handlers.investigate.handler",
    "handlers.propose.handler",
    "handlers.review.handler",
    "handlers.approval.request_handler",
    "handlers.remediate.handler",
    "handlers.verify.handler",
]


def client_error(code: str, status: int) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": "said"}, "ResponseMetadata": {"HTTPStatusCode": status}}, "Op"
    )


@pytest.mark.parametrize(
    "error, passing",
    [
        (client_error("InternalError", 500), True),
        (client_error("ServiceUnavailable", 503), True),
        (client_error("SlowDown", 503), True),
        (client_error("ThrottlingException", 400), True),
        (client_error("ProvisionedThroughputExceededException", 400), True),
        (client_error("RequestTimeout", 400), True),
        (EndpointConnectionError(endpoint_url="https://s3.amazonaws.com"), True),
        (ConnectTimeoutError(endpoint_url="https://s3.amazonaws.com"), True),
        (ReadTimeoutError(endpoint_url="https://s3.amazonaws.com"), True),
        (client_error("AccessDenied", 403), False),
        (client_error("ConditionalCheckFailedException", 400), False),
        (client_error("ResourceNotFoundException", 404), False),
        (ValueError("not AWS"), False),
    ],
)
def test_what_passes_is_what_botocore_retries(error, passing):
    assert is_transient(error) is passing


def test_a_passing_error_is_renamed_and_keeps_its_cause_and_any_other_keeps_its_name():
    def failing(error):
        @retry_passing_aws_errors
        def handler(event, context):
            raise error

        return handler

    with pytest.raises(AwsTransientError, match="ClientError: .*InternalError") as renamed:
        failing(client_error("InternalError", 500))({}, None)
    assert isinstance(renamed.value.__cause__, ClientError)
    with pytest.raises(ClientError):
        failing(client_error("AccessDenied", 403))({}, None)
    assert retry_passing_aws_errors(lambda event, context: {"ok": event})(1, None) == {"ok": 1}


@pytest.mark.parametrize("path", TASK_HANDLERS)
def test_every_handler_the_state_machine_runs_renames_passing_errors(path):
    module, name = path.rsplit(".", 1)
    function = getattr(importlib.import_module(module), name)
    chain = []
    while function is not None:
        chain.append(function.__code__.co_qualname)  # functools.wraps copies __qualname__, not the code's
        function = getattr(function, "__wrapped__", None)
    assert "retry_passing_aws_errors.<locals>.wrapped" in chain, chain


def test_every_task_running_a_function_retries_a_passing_error():
    tasks = {
        name: state
        for name, state in ASL["States"].items()
        if state.get("Resource", "").startswith("arn:aws:states:::lambda:invoke")
    }
    assert len(tasks) == len(TASK_HANDLERS) + 2  # the critic and the verifier, ... (Apply, Undo and Free: one function)
    for name, state in tasks.items():
        retried = [r for r in state["Retry"] if "AwsTransientError" in r["ErrorEquals"]]
        assert retried and retried[0]["JitterStrategy"] == "FULL" and retried[0]["MaxAttempts"] >= 3, name


# Lambda's answers while a version is not ready to run, as Step Functions names them ("Lambda." + the Invoke error):
# a SnapStart version idle for 14 days is Inactive and answers SnapStartNotReadyException until Lambda has made its
# snapshot again; a just-published one may answer CodeArtifactUserPendingException (HTTP 409) until it is Active.
NOT_READY = ("Lambda.SnapStartNotReadyException", "Lambda.CodeArtifactUserPendingException")
# Lambda gives no figure for how long making a snapshot again takes; publishing one takes minutes, not seconds.
NOT_READY_PATIENCE_SECONDS = 300


def retry_waits(retrier: dict) -> list[float]:
    """The waits before each retry, without jitter (the longest a retrier may wait)."""
    interval, rate = retrier.get("IntervalSeconds", 1), retrier.get("BackoffRate", 2.0)
    cap = retrier.get("MaxDelaySeconds", float("inf"))
    return [min(interval * rate**n, cap) for n in range(retrier.get("MaxAttempts", 3))]


@pytest.mark.parametrize("error", NOT_READY)
def test_every_task_running_a_function_waits_for_a_version_that_is_not_ready(error):
    tasks = {
        name: state
        for name, state in ASL["States"].items()
        if state.get("Resource", "").startswith("arn:aws:states:::lambda:invoke")
    }
    assert tasks
    for name, state in tasks.items():
        (retrier,) = [r for r in state.get("Retry", []) if error in r["ErrorEquals"]] or [None]
        assert retrier is not None, f"{name}: {error} is not retried"
        assert "JitterStrategy" not in retrier or retrier["JitterStrategy"] == "NONE", name  # full waits, not less
        assert sum(retry_waits(retrier)) >= NOT_READY_PATIENCE_SECONDS, f"{name}: {retry_waits(retrier)}"
