"""X-Ray tracing for the handlers: Powertools' Tracer where a segment can be written, nothing elsewhere.

Deployed, every function has ``Tracing: Active``: Lambda itself records each invocation's segment (init,
invocation, overhead). Powertools' Tracer adds the handler's subsegment (``ColdStart`` and ``Service``
annotations) and one subsegment per call through a patched library. It needs the X-Ray SDK, which is
loaded then, at init (inside the SnapStart snapshot). Wherever Powertools would disable tracing (outside
Lambda, under SAM local, or ``POWERTOOLS_TRACE_DISABLED``: the lab, the tests, the CLI) no segment can be
written, so the SDK is not loaded at all: the handlers get a tracer with the same decorators that does
nothing. Powertools' own disabled Tracer still imports the SDK, and outside Lambda the SDK's recorder
builds two botocore clients for centralized sampling at import (about 0.25 s for nothing).

Only the libraries a function calls through are patched: ``botocore`` (AWS calls; Bedrock included) and,
for the agents, ``httpx`` (MCP requests, OpenAI-compatible endpoints). Powertools' default patches every
library the SDK knows, which imports requests, sqlite3 and httpx into functions that use none of them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

AWS_CALLS = ("botocore",)
AWS_AND_HTTP_CALLS = ("botocore", "httpx")


def tracing_enabled() -> bool:
    """Powertools' rule for whether a segment can be written here (see ``Tracer._is_tracer_disabled``)."""
    from aws_lambda_powertools.shared import constants
    from aws_lambda_powertools.shared.functions import resolve_truthy_env_var_choice

    if resolve_truthy_env_var_choice(env=os.getenv(constants.TRACER_DISABLED_ENV, "false")):
        return False
    in_lambda = bool(os.getenv(constants.LAMBDA_TASK_ROOT_ENV))
    emulated = bool(os.getenv(constants.SAM_LOCAL_ENV) or os.getenv(constants.CHALICE_LOCAL_ENV))
    return in_lambda and not emulated


class DisabledTracer:
    """The part of Powertools' Tracer the handlers use, where no segment can be written: calls pass through."""

    disabled = True

    def capture_lambda_handler(self, lambda_handler: Callable | None = None, **_: Any) -> Any:
        return lambda_handler if lambda_handler is not None else (lambda handler: handler)

    def capture_method(self, method: Callable | None = None, **_: Any) -> Any:
        return method if method is not None else (lambda function: function)

    def put_annotation(self, key: str, value: Any) -> None:
        return None

    def put_metadata(self, key: str, value: Any, namespace: str | None = None) -> None:
        return None


def lambda_tracer(service: str, patch_modules: Sequence[str] = AWS_CALLS) -> Any:
    """Powertools' Tracer patching ``patch_modules`` when tracing is on, else a :class:`DisabledTracer`."""
    if not tracing_enabled():
        return DisabledTracer()
    from aws_lambda_powertools import Tracer

    return Tracer(service=service, patch_modules=list(patch_modules))
