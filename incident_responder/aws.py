"""boto3 clients for one account, created once and reused.

Endpoints follow boto3's own settings, so the same code reaches a real account or the embedded
lab: the lab only sets ``AWS_ENDPOINT_URL`` (honoured natively by boto3) and dummy credentials.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import boto3
from botocore.config import Config

# Bounded so that an unreachable endpoint becomes an error within seconds, not minutes.
DEFAULT_CONFIG = Config(connect_timeout=5, read_timeout=30, retries={"mode": "standard", "max_attempts": 3})


_SHARED: dict[tuple, AwsClients] = {}
_SHARED_LOCK = threading.Lock()


class AwsClients:
    """Lazily created, cached boto3 clients sharing one session.

    >>> clients = AwsClients(boto3.Session(region_name="us-east-1"))
    >>> clients.get("lambda") is clients.get("lambda")
    True
    """

    def __init__(self, session: boto3.Session | None = None, config: Config = DEFAULT_CONFIG):
        self.session = session or boto3.Session()
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


def forget_shared_clients() -> None:
    """Drop every :meth:`AwsClients.shared` instance: the next call makes new clients, with credentials
    resolved then (after a SnapStart restore, see :mod:`incident_responder.runtime_hooks`)."""
    with _SHARED_LOCK:
        _SHARED.clear()
