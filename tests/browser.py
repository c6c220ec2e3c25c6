"""A headless Chromium for the tests that look at a page as a person would (skipped, with the reason, without one)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile

import pytest

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def browser() -> str:
    """The browser's path, or the test is skipped saying how to install one."""
    for name in NAMES:
        if path := shutil.which(name):
            return path
    pytest.skip(f"no headless browser on PATH ({', '.join(NAMES)}): apt-get install chromium")


def run_browser(binary: str, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    # --no-sandbox: the test may run as root (CI containers), where Chromium refuses its sandbox. The
    # background-networking flags: otherwise Chromium keeps trying hosts a closed network refuses.
    with tempfile.TemporaryDirectory() as profile:
        command = [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            *args,
        ]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout)
