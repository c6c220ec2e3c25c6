"""The lab's own errors: a template rule broken at deploy, a trail lookup refused, a handler failed in its worker."""

from __future__ import annotations


class StackRuleError(ValueError):
    """The parameters break one of the template's ``Rules``: CloudFormation would not create the stack."""


class TrailLookupError(ValueError):
    """A LookupEvents request CloudTrail refuses (its error code and message)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


class FunctionError(Exception):
    """A handler failed in its worker: Lambda's ``Unhandled`` error, with the handler's own error type."""

    def __init__(self, error_type: str, message: str, stack: list[str] | None = None):
        super().__init__(message)
        self.error_type = error_type
        self.stack = stack or []
