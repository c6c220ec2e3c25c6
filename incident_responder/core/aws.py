"""boto3 clients for one account, created once and reused.

Endpoints follow boto3's own settings, so the same code reaches a real account or the embedded
lab: the lab only sets ``AWS_ENDPOINT_URL`` (honoured natively by boto3) and dummy credentials.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, TypeVar

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.retries.standard import RetryContext, ThrottledRetryableChecker, TransientRetryableChecker

from incident_responder.core.errors import StateMachineError

# Bounded so that an unreachable endpoint becomes an error within seconds, not minutes.
DEFAULT_CONFIG = Config(connect_timeout=5, read_timeout=30, retries={"mode": "standard", "max_attempts": 3})


def new_session(**kwargs: Any) -> boto3.Session:
    """A boto3 session whose Region honours ``AWS_REGION`` as the AWS CLI, the other SDKs and the Lambda runtime
    do: over ``AWS_DEFAULT_REGION`` and the profile's. botocore reads only those two, so a shell that exports
    ``AWS_REGION`` alone would otherwise have no Region at all."""
    kwargs.setdefault("region_name", os.environ.get("AWS_REGION") or None)
    return boto3.Session(**kwargs)


_SHARED: dict[tuple, AwsClients] = {}
_SHARED_LOCK = threading.Lock()


class AwsClients:
    """Lazily created, cached boto3 clients sharing one session.

    >>> clients = AwsClients(boto3.Session(region_name="us-east-1"))
    >>> clients.get("lambda") is clients.get("lambda")
    True
    """

    def __init__(self, session: boto3.Session | None = None, config: Config = DEFAULT_CONFIG):
        self.session = session or new_session()
        self._config = config
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()

    @classmethod
    def shared(cls) -> AwsClients:
        """One instance per process and environment: warm Lambda invocations reuse their clients.

        Keyed by what boto3 reads from the environment, so a process that points at another endpoint
        (the lab, tests) never gets clients bound to the old one.
        """
        key = tuple(
            os.environ.get(v)
            for v in ("AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_PROFILE")
        )
        with _SHARED_LOCK:
            if key not in _SHARED:
                _SHARED[key] = cls()
            return _SHARED[key]

    def get(self, service: str) -> Any:
        with self._lock:
            if service not in self._clients:
                config = self._config
                if service == "s3":  # pre-signed URLs signed with SigV4 (botocore still signs them with SigV2)
                    config = config.merge(Config(signature_version="s3v4"))
                self._clients[service] = self.session.client(service, config=config)
            return self._clients[service]

    @property
    def region(self) -> str:
        return self.get("lambda").meta.region_name

    @property
    def endpoint_url(self) -> str:
        return self.get("lambda").meta.endpoint_url

    def account_id(self) -> str:
        return self.get("sts").get_caller_identity()["Account"]

    def in_account(self, service: str) -> Any:
        """A client for the resources of the account these clients act in (a member's own DynamoDB tables, say),
        where :meth:`get` keeps the deployment's stores central (:class:`incident_responder.core.members.MemberClients`)."""
        return self.get(service)


def forget_shared_clients() -> None:
    """Drop every :meth:`AwsClients.shared` instance: the next call makes new clients, with credentials
    resolved then (after a SnapStart restore, see :mod:`incident_responder.core.runtime_hooks`)."""
    with _SHARED_LOCK:
        _SHARED.clear()


# -- errors that pass -------------------------------------------------------------------------------
class AwsTransientError(StateMachineError, RuntimeError):
    """An AWS call still failed after botocore's own attempts, in a way that passes (throttled, a 5xx, a timeout,
    an endpoint out of reach). Raised by a handler under this name, so the state machine's Retry waits and calls
    the task again instead of ending the incident ERROR."""


# botocore's own judgement of what its standard retry mode retries (error codes, 5xx, connection errors).
_PASSING = (TransientRetryableChecker(), ThrottledRetryableChecker())


def is_transient(exc: BaseException) -> bool:
    """Whether botocore's standard retry mode would have called again for this error."""
    if isinstance(exc, ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        context = RetryContext(
            attempt_number=1, parsed_response=exc.response, http_response=SimpleNamespace(status_code=status)
        )
    else:
        context = RetryContext(attempt_number=1, caught_exception=exc)
    return any(checker.is_retryable(context) for checker in _PASSING)


Handler = TypeVar("Handler", bound=Callable[..., Any])


def retry_passing_aws_errors(handler: Handler) -> Handler:
    """A Lambda handler whose passing AWS errors reach the state machine as :class:`AwsTransientError`."""

    @functools.wraps(handler)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return handler(*args, **kwargs)
        except Exception as exc:
            if is_transient(exc):
                raise AwsTransientError(f"{type(exc).__name__}: {exc}") from exc
            raise

    return wrapped  # type: ignore[return-value]
