"""Every stage: what goes wrong reading the account, the exceptions raised here, and one line for an AWS failure.

BaselineNotFoundError can reach the state machine (the catch-all of the task raising it routes it); the others
are answers of the MCP tools and the command line.
"""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError

from incident_responder.core.errors import StateMachineError


class BaselineNotFoundError(StateMachineError, LookupError):
    """No baseline is recorded for this function (it was never onboarded)."""


class InvalidFunctionNameError(ValueError):
    """A function name or ARN Lambda would refuse: refused here, before any AWS call."""


class ForeignFunctionError(ValueError):
    """A function ARN of another account or Region than the one read: the function of that name here is another."""


class OutOfScopeError(ValueError):
    """The tool was asked about a function it must not answer for."""


def describe_error(exc: Exception) -> str:
    """One line for an AWS failure: the error code and message, never a traceback."""
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        return f"{err.get('Code', 'ClientError')}: {err.get('Message', str(exc))}"
    return f"{type(exc).__name__}: {exc}"


AWS_ERRORS = (ClientError, BotoCoreError)
