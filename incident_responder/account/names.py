"""Every stage: which Lambda function a name or ARN means (refused before any AWS call if none), and a role's name."""

from __future__ import annotations

import re

from incident_responder.account.errors import ForeignFunctionError, InvalidFunctionNameError
from incident_responder.core.contracts import QUALIFIER_RE

FUNCTION_NAME_RE = r"[A-Za-z0-9_-]{1,64}"
FUNCTION_ARN_RE = (
    r"arn:aws[a-zA-Z-]*:lambda:[a-z]{2}(?:-gov)?-[a-z]+-\d:\d{12}:function:"
    + FUNCTION_NAME_RE
    + rf"(?::(?:{QUALIFIER_RE}))?"
)
# A function name or a function ARN, as Lambda accepts them; anything else never reaches AWS.
LAMBDA_NAME_PATTERN = rf"^(?:{FUNCTION_NAME_RE}|{FUNCTION_ARN_RE})$"


def function_name_of(name_or_arn: str) -> str:
    """The bare function name of a name or ARN.

    >>> function_name_of("arn:aws:lambda:us-east-1:123456789012:function:data-processor:prod")
    'data-processor'
    """
    # fullmatch: "$" in a pattern also matches before a trailing newline; no control character gets through.
    if not isinstance(name_or_arn, str) or not re.fullmatch(LAMBDA_NAME_PATTERN, name_or_arn):
        raise InvalidFunctionNameError(
            f"not a Lambda function name or ARN: {name_or_arn!r} (expected 1-64 of A-Z a-z 0-9 _ -, "
            "or arn:aws:lambda:REGION:ACCOUNT:function:NAME)"
        )
    if name_or_arn.startswith("arn:"):
        return name_or_arn.split(":")[6]
    return name_or_arn


def check_same_function(asked: str, found_arn: str) -> None:
    """``asked`` (a name or ARN) read as ``found_arn``: an ARN names its account and Region, and the function of its
    name in another one is another function, so reading it in its place is refused (ForeignFunctionError)."""
    want, got = asked.split(":"), found_arn.split(":")
    if asked.startswith("arn:") and want[1:5] != got[1:5]:
        raise ForeignFunctionError(
            f"{asked} is in account {want[4]}, Region {want[3]}; these credentials reach account {got[4]} in "
            f"{got[3]}, where {got[6]} is another function: onboard it with its own account's credentials and Region"
        )


def role_name_of(role_arn: str) -> str:
    """``arn:aws:iam::1:role/service-role/x`` -> ``x`` (IAM APIs take the name without path)."""
    return role_arn.rsplit("/", 1)[-1]
