"""INVESTIGATING and PROPOSING: what the MCP tools take, validated types whose JSON schema a model is shown."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, WithJsonSchema

from incident_responder.account.names import LAMBDA_NAME_PATTERN, function_name_of
from incident_responder.core.contracts import QUALIFIER_RE


def _check_lambda_name(value: str) -> str:
    function_name_of(value)  # raises a ValueError that says what is expected
    return value


# Validated by a function (for a message a model can act on), published with the pattern in the schema.
LambdaName = Annotated[
    str,
    AfterValidator(_check_lambda_name),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": LAMBDA_NAME_PATTERN,
            "description": "Lambda function name (1-64 of A-Z a-z 0-9 _ -) or function ARN",
        }
    ),
]
Minutes = Annotated[int, Field(ge=1, le=1440, description="how far back to look, in minutes")]
Hours = Annotated[int, Field(ge=1, le=2160, description="how far back to look, in hours (CloudTrail keeps 90 days)")]
Qualifier = Annotated[
    str | None,
    Field(
        pattern=rf"^({QUALIFIER_RE})$",
        description="an alias or version (the incident's qualifier): read what runs behind it; unset: $LATEST",
    ),
]
