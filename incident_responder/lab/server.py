"""moto in server mode on 127.0.0.1, shared by every process that is given its endpoint.

Other processes (the MCP servers, the chaos CLI) reach it through boto3's own ``AWS_ENDPOINT_URL``
setting plus dummy credentials: :func:`lab_environment` gives exactly those variables.
"""

from __future__ import annotations

import logging
import os
import socket
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import requests

from incident_responder.lab.cloudtrail import CloudTrailRecorder
from incident_responder.lab.environment import lab_environment
from incident_responder.lab.in_process import serve_in_process, stop_serving_in_process
from incident_responder.lab.moto_patches.pinned import apply as apply_moto_patches
from incident_responder.lab.request_failures import RequestFailures, _Failure

# Posted before any resource exists: Lambda without Docker, Step Functions that really execute.
MOTO_CONFIG = {"lambda": {"use_docker": False}, "stepfunctions": {"execute_state_machine": True}}


class Lab:
    """A running moto server. Use as a context manager, or call :meth:`start` / :meth:`stop`."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1"):
        self.host = host
        self.port = port
        self._server: Any = None
        self.chaos_state_dir: Path | None = None
        self._failures: RequestFailures | None = None
        # The account's management events, as CloudTrail's LookupEvents answers them (see CloudTrailRecorder).
        self.trail = CloudTrailRecorder()

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        return lab_environment(self.endpoint_url)

    def start(self) -> Lab:
        # Imported here: only the lab needs moto, deployed Lambdas never do.
        from moto.server import ThreadedMotoServer

        from chaos.snapshots import default_state_dir, forget_endpoint
        from incident_responder.lab.botocore_data import share_loaders

        for noisy in ("werkzeug", "moto.stepfunctions"):
            logging.getLogger(noisy).setLevel(logging.ERROR)
        # moto's CloudFormation skips the stack's SNS subscriptions (and says so, twice, per deploy); the lab
        # creates them through the API (lab/stack.py).
        logging.getLogger("moto").addFilter(_NOT_SUBSCRIPTIONS)  # the same instance: added once per process
        warnings.filterwarnings("ignore", message="Tried to parse AWS::SNS::Subscription", category=UserWarning)
        share_loaders()  # before moto makes a session per service backend
        apply_moto_patches()  # every patch of moto's internals (moto_patches/), once; refuses an untested moto
        if self.port:
            _ensure_free(self.host, self.port)
        self._server = ThreadedMotoServer(ip_address=self.host, port=self.port, verbose=False)
        self._server.start()
        self.host, self.port = self._server.get_host_and_port()
        # werkzeug looks the app up on its server for every request: wrapping it there is enough.
        wsgi_server = self._server._server
        self._failures = RequestFailures(wsgi_server.app, trail=self.trail)
        wsgi_server.app = self._failures
        # This process's own calls (the lab's, and moto's Task states calling back) skip the socket.
        for host in (self.host, "localhost"):
            serve_in_process(f"{host}:{self.port}", self._failures)
        # moto's own Task states call back into "localhost:MOTO_PORT".
        os.environ["MOTO_PORT"] = str(self.port)
        self.configure()
        # Chaos keys the originals it keeps by endpoint; those of an earlier lab on this port describe
        # an account that is gone, and restoring them would fail or put back the wrong values.
        self.chaos_state_dir = default_state_dir()
        forget_endpoint(self.chaos_state_dir, self.endpoint_url)
        return self

    def configure(self) -> None:
        response = requests.post(f"{self.endpoint_url}/moto-api/config", json=MOTO_CONFIG, timeout=10)
        response.raise_for_status()

    def reset(self) -> None:
        """Forget every resource (a fresh account) and re-apply the configuration; the trail is forgotten
        with them (by the request itself, whoever sends it)."""
        requests.post(f"{self.endpoint_url}/moto-api/reset", timeout=30).raise_for_status()
        self.configure()

    def clear_metrics(self) -> None:
        """Forget every CloudWatch datapoint (CloudWatch has no API to delete them; the lab's moto is in
        this process): what a workload published in one scenario must not show in the next one's window."""
        from moto.cloudwatch.models import cloudwatch_backends

        for backends in cloudwatch_backends.values():
            for backend in backends.values():
                backend.metric_data.clear()
                backend.paged_metric_data.clear()

    def fail_requests(
        self,
        action: str,
        *,
        times: int = 1,
        code: str = "InjectedFailure",
        status: int = 400,
        message: str = "the lab failed this request on purpose",
        service: str | None = None,
    ) -> None:
        """Answer the next ``times`` requests for API operation ``action`` (e.g. ``PutFunctionConcurrency``,
        ``AuthorizeSecurityGroupEgress``) with the AWS error ``code``, without reaching moto.

        ``service`` (the signing name: ``lambda``, ``ec2``, ``iam``, ...) narrows the match. Each attempt
        counts, so a 5xx status that botocore retries uses up ``times`` faster: the default 400 is not retried.
        JSON, query, EC2 and REST APIs are matched; CloudWatch's CBOR protocol is not.
        """
        if self._failures is None:
            raise RuntimeError("the lab is not running")
        self._failures.add(
            _Failure(action=action, service=service, times=times, code=code, status=status, message=message)
        )

    def count_calls(self, on: bool = True) -> None:
        """Count every API call from now on (by access key, service and operation), or stop counting."""
        if self._failures is not None:
            self._failures.calls = Counter() if on else None

    def calls(self) -> Counter[tuple[str, str, str]]:
        """The calls counted so far (a copy): (access key, service, operation) -> how many."""
        counted = self._failures.calls if self._failures is not None else None
        return Counter(counted or {})

    def clear_failures(self) -> None:
        """Forget every pending injected failure."""
        if self._failures is not None:
            self._failures.clear()

    @property
    def failed_requests(self) -> list[str]:
        """``service:Operation`` of each request answered with an injected failure, oldest first."""
        return list(self._failures.failed) if self._failures is not None else []

    def stop(self) -> None:
        for host in (self.host, "localhost"):
            stop_serving_in_process(f"{host}:{self.port}")
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> Lab:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _NotSubscriptions(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "AWS::SNS::Subscription" not in record.getMessage()


_NOT_SUBSCRIPTIONS = _NotSubscriptions()


def _ensure_free(host: str, port: int) -> None:
    """moto's server thread dies on a port in use while its start() waits forever: find out first."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds (allow_reuse_address)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise OSError(
                exc.errno,
                f"port {port} on {host} is already in use ({exc.strerror}): stop what holds it, or pass --port",
            ) from None
