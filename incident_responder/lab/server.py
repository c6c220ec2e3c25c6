"""moto in server mode on 127.0.0.1, shared by every process that is given its endpoint.

Other processes (the MCP servers, the chaos CLI) reach it through boto3's own ``AWS_ENDPOINT_URL``
setting plus dummy credentials: :func:`lab_environment` gives exactly those variables.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import requests

LAB_REGION = "us-east-1"
LAB_ACCOUNT_ID = "123456789012"

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

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        return lab_environment(self.endpoint_url)

    def start(self) -> Lab:
        # Imported here: only the lab needs moto, deployed Lambdas never do.
        from moto.server import ThreadedMotoServer

        for noisy in ("werkzeug", "moto.stepfunctions"):
            logging.getLogger(noisy).setLevel(logging.ERROR)
        self._server = ThreadedMotoServer(ip_address=self.host, port=self.port, verbose=False)
        self._server.start()
        self.host, self.port = self._server.get_host_and_port()
        # moto's own Task states call back into "localhost:MOTO_PORT".
        os.environ["MOTO_PORT"] = str(self.port)
        self.configure()
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
