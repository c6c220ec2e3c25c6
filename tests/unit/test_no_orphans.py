"""Nothing a test starts outlives `make test`: a child left running by a test that timed out is ended with its
worker (tests/process_group.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

LEAVES_A_CHILD = """
import os, subprocess, sys, time

def test_starts_a_child_and_hangs():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.environ["CHILD_PID_FILE"], "w") as out:
        out.write(str(child.pid))
    time.sleep(600)  # the per-test timeout ends the test; nothing here ends the child
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_a_child_a_timed_out_test_left_is_ended_with_its_worker(tmp_path):
    (tmp_path / "test_leaves_a_child.py").write_text(LEAVES_A_CHILD)
    pid_file = tmp_path / "child.pid"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "1",
            "-p",
            "tests.process_group",
            "--timeout",
            "5",
            "-q",
            "-p",
            "no:cacheprovider",
            str(tmp_path / "test_leaves_a_child.py"),
        ],
        cwd=REPO,
        env={**os.environ, "CHILD_PID_FILE": str(pid_file), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 1 and "Timeout" in run.stdout, run.stdout[-2000:]
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 60  # the worker's end is asynchronous to pytest's exit: a hang guard, not a bound
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid), f"the test's child {pid} outlived the run"
