"""The failure catalogue's shape: an entry (:class:`FailureMode`), the strings AWS prints for it
(:class:`Signature`), the page's sections (``AREAS``) and the AWS pages the entries cite.

Pure data, read at cold start: no imports beyond the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SignatureKind = Literal["error_code", "platform_error", "network_error", "message"]
Responder = Literal["fixed", "handed_over", "not_yet"]


@dataclass(frozen=True)
class Signature:
    """A string AWS prints for this failure, exactly as printed, and how the log reader classifies it."""

    text: str
    kind: SignatureKind
    category: str | None = None  # log_records.Category, or None when the log reader does not classify it


@dataclass(frozen=True)
class FailureMode:
    """One way a Lambda function fails, what AWS says about it, and what the responder does with it."""

    id: str
    area: str  # a key of AREAS: the section of the docs page
    title: str
    symptom: str
    shows_in: tuple[str, ...]
    cause: str
    fix: str
    responder: Responder
    fault_type: str | None
    action_type: str | None
    handover: str
    signatures: tuple[Signature, ...]
    sources: tuple[str, ...]
    # What the lab reproduces of it, and what it cannot emulate honestly (said on the page); empty: all of it.
    lab_note: str = ""


# The page's sections, in order.
AREAS = {
    "invocation": "Invocation and permissions",
    "concurrency": "Concurrency and throttling",
    "configuration": "Configuration and limits",
    "networking": "Networking (VPC)",
    "kms": "Encryption of environment variables (KMS)",
    "event-sources": "Event source mappings",
    "async": "Asynchronous invocation and recursion",
    "deployment": "Deployment, code and runtime",
    "mounts": "File systems and SnapStart",
}


def _code(text: str, category: str | None = None) -> Signature:
    return Signature(text, "error_code", category)


def _platform(text: str, category: str | None = None) -> Signature:
    return Signature(text, "platform_error", category)


def _network(text: str) -> Signature:
    return Signature(text, "network_error", "network")


def _message(text: str, category: str | None = None) -> Signature:
    return Signature(text, "message", category)


_DG = "https://docs.aws.amazon.com/lambda/latest/dg/"
_API = "https://docs.aws.amazon.com/lambda/latest/api/"
_BOTOCORE = "https://docs.aws.amazon.com/botocore/latest/reference/services/"
INVOKE = _API + "API_Invoke.html"
TS_INVOCATION = _DG + "troubleshooting-invocation.html"
TS_EXECUTION = _DG + "troubleshooting-execution.html"
TS_DEPLOYMENT = _DG + "troubleshooting-deployment.html"
TS_NETWORKING = _DG + "troubleshooting-networking.html"
TS_CONFIGURATION = _DG + "troubleshooting-configuration.html"
METRICS = _DG + "monitoring-metrics-types.html"
RUNTIME_ENVIRONMENT = _DG + "lambda-runtime-environment.html"
ESM_CONFIGURATION = _API + "API_EventSourceMappingConfiguration.html"
UPDATE_ESM = _API + "API_UpdateEventSourceMapping.html"
TOO_MANY_REQUESTS = _BOTOCORE + "lambda/client/exceptions/TooManyRequestsException.html"
# AWS's own code, for the error types its pages name only in passing.
RUNTIME_EMULATOR = "https://github.com/aws/aws-lambda-runtime-interface-emulator"
PYTHON_RUNTIME_CLIENT = "https://github.com/aws/aws-lambda-python-runtime-interface-client"
NODE_RUNTIME_CLIENT = "https://github.com/aws/aws-lambda-nodejs-runtime-interface-client"
REPOST_THROTTLING = "https://repost.aws/knowledge-center/lambda-troubleshoot-throttling"
ERRNO = "https://man7.org/linux/man-pages/man3/errno.3.html"

_ACCESS_DENIED = "access_denied"
_THROTTLED = "throttled"
