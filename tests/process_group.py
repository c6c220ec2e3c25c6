"""Nothing a test started outlives the run: each test worker leads a process group of its own, and once its tests
and fixtures are done it ends whatever is still in that group (a `make typecheck` whose mypy a timed-out test left
behind, a lab server a crashed fixture never stopped).

A plugin (``-p tests.process_group``, which tests/conftest.py loads): only pytest-xdist workers take a group of
their own. A run without workers keeps the terminal's group, so Ctrl-C still reaches it.
"""

from __future__ import annotations

import os
import signal

import pytest


def _worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    if _worker(config) and os.getpgrp() != os.getpid():
        os.setpgrp()


def pytest_unconfigure(config: pytest.Config) -> None:
    if not _worker(config) or os.getpgrp() != os.getpid():
        return
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the worker itself is in the group it ends
    try:
        os.killpg(os.getpgrp(), signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, previous)
