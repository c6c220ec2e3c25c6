"""Running the responder command and its lab as a person does, in processes of their own: a clean environment,
the command, its children."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).parents[1]
RESPONDER = [sys.executable, "-m", "incident_responder.cli"]


# What a user's shell may hold from elsewhere: none of it may change how the lab is reached.
STRAY = {
    "AWS_PROFILE": "no-such-profile",
    "MCP_API_KEY": "a-key-from-another-server",
    "MCP_API_KEY_PARAMETER": "/somewhere/else",
    "MCP_AUTH": "api_key",
}


def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MCP_", "MOTO_", "RESPONDER_"))}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")  # chaos's default state directory, kept out of $HOME
    env["AWS_CONFIG_FILE"] = env["AWS_SHARED_CREDENTIALS_FILE"] = str(tmp_path / "no-aws-files")
    return env


def children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def descendants_of(pid: int) -> list[int]:
    """Every process ``pid`` started, and theirs, whichever process group or session they are in."""
    found, todo = [], [pid]
    while todo:
        for child in children_of(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def responder(*argv: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*RESPONDER, *argv], env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO)
