"""Types as a habit: mypy over the production packages, the handlers, chaos and the MCP servers finds nothing
(``make typecheck``; the configuration is ``[tool.mypy]`` in pyproject.toml). It runs here, beside the other
tests, rather than before them: on 2 cores its quarter-minute of CPU overlaps the suite's waits."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed (the checks are its typecheck target)")
def test_make_typecheck_finds_nothing(tmp_path):
    # A cache of its own: a run beside a developer's `make typecheck` never shares (or corrupts) theirs.
    out = subprocess.run(
        ["make", "--no-print-directory", "typecheck"],
        cwd=REPO,
        env={**os.environ, "MYPY_CACHE_DIR": str(tmp_path / "mypy-cache")},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert out.stdout.count("Success: no issues found") == 3, out.stdout[-2000:]
