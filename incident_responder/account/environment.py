"""Every stage: what a function's environment names: values only as digests, the secrets it names by ARN."""

from __future__ import annotations

import hashlib
import re

from pydantic import BaseModel, Field

from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import SECRET_ARN_PATTERN


class SecretState(BaseModel):
    """A Secrets Manager secret the function's environment names (by ARN)."""

    secret_arn: str
    variable: str = Field(description="the environment variable whose value names it")
    exists: bool = True
    deleted_date: str | None = Field(default=None, description="set while the secret is scheduled for deletion")


SECRET_ARN_IN_TEXT = re.compile(SECRET_ARN_PATTERN)


def value_digest(value: str) -> str:
    """What the baseline keeps of an environment value: enough to tell it changed, never the value."""
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:16]


def read_secrets(clients: AwsClients, variables: dict[str, str]) -> list[SecretState]:
    """The Secrets Manager secrets the environment names by ARN, with whether they exist and any deletion date."""
    from botocore.exceptions import ClientError

    out = []
    for name, value in sorted(variables.items()):
        if not SECRET_ARN_IN_TEXT.match(value or ""):
            continue
        try:
            described = clients.get("secretsmanager").describe_secret(SecretId=value)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code in ("AccessDeniedException", "AccessDenied"):
                continue  # not one the reader may see (the remediate role reads onboarded, tagged secrets only)
            if code != "ResourceNotFoundException":
                raise
            out.append(SecretState(secret_arn=value, variable=name, exists=False))
            continue
        deleted = described.get("DeletedDate")
        out.append(
            SecretState(
                secret_arn=described.get("ARN", value),
                variable=name,
                deleted_date=deleted.isoformat() if hasattr(deleted, "isoformat") else deleted,
            )
        )
    return out
