"""moto in server mode on 127.0.0.1, shared by every process that is given its endpoint.

Other processes (the MCP servers, the chaos CLI) reach it through boto3's own ``AWS_ENDPOINT_URL``
setting plus dummy credentials: :func:`lab_environment` gives exactly those variables.
"""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path
from typing import Any

import requests

LAB_REGION = "us-east-1"
LAB_ACCOUNT_ID = "123456789012"
# Client settings a shell may hold for other accounts or servers: they would win over the lab's own (a
# profile, an MCP server list) or change how requests to the lab's function URLs are signed (a bearer
# key). Lab commands drop them in their own process; `responder lab up` tells other shells to unset them.
NOT_FOR_THE_LAB = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "MCP_API_KEY",
    "MCP_API_KEY_PARAMETER",
    "MCP_AUTH",
    "RESPONDER_MCP_CONFIG",
    "RESPONDER_MCP_SERVERS",
)

# Posted before any resource exists: Lambda without Docker, Step Functions that really execute.
MOTO_CONFIG = {"lambda": {"use_docker": False}, "stepfunctions": {"execute_state_machine": True}}


def lab_environment(endpoint_url: str) -> dict[str, str]:
    """Environment variables that point boto3 (in any process) at the lab."""
    return {
        "AWS_ENDPOINT_URL": endpoint_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": LAB_REGION,
        "AWS_REGION": LAB_REGION,
    }


class Lab:
    """A running moto server. Use as a context manager, or call :meth:`start` / :meth:`stop`."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1"):
        self.host = host
        self.port = port
        self._server: Any = None
        self.chaos_state_dir: Path | None = None

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

        for noisy in ("werkzeug", "moto.stepfunctions"):
            logging.getLogger(noisy).setLevel(logging.ERROR)
        if self.port:
            _ensure_free(self.host, self.port)
        self._server = ThreadedMotoServer(ip_address=self.host, port=self.port, verbose=False)
        self._server.start()
        self.host, self.port = self._server.get_host_and_port()
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
        """Forget every resource (a fresh account) and re-apply the configuration."""
        requests.post(f"{self.endpoint_url}/moto-api/reset", timeout=30).raise_for_status()
        self.configure()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> Lab:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


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
