"""The lab's fork server: its SnapStart. One process imports the heavy packages once, and every execution environment
of the lab is forked from it: each function's workers (:mod:`.workers`) and each function URL's server
(:mod:`.function_url`), so none pays for importing boto3, pydantic, LangGraph or the MCP SDK again.

(multiprocessing's own fork server would import the caller's ``__main__`` again in every child.) Requests come over a
Unix socket: one file descriptor (a worker's end of its socket pair, or the socket a function URL listens on), the
child's entry point (``module:function``) and its arguments; the answer is the child's pid. The fork server reaps its children, exits when this process's end
of its stdin closes, and kills every child it forked as it goes: none outlives the lab.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

from incident_responder.lab.errors import FunctionError

# Imported by the fork server before it forks any child: the third-party packages and the project's modules the
# handlers use (none of which reads the environment at import). The handler modules themselves (their Logger,
# settings, clients and MCP servers read the function's environment) are imported in each child.
PRELOAD = [
    "boto3",
    "botocore.session",
    "pydantic",
    "yaml",
    "aws_lambda_powertools",
    "aws_lambda_powertools.utilities.parameters",
    "incident_responder.core.contracts",
    "incident_responder.core.settings",
    "incident_responder.intake.ingest",
    "incident_responder.state.lifecycle",
    "incident_responder.investigation.investigate",
    "incident_responder.proposal.propose",
    "incident_responder.review.review",
    "incident_responder.approval.request",
    "incident_responder.approval.page",
    "incident_responder.remediation.remediate",
    "incident_responder.remediation.verify",
    "incident_responder.agent.graph",
    # What the function URLs' servers run on: the MCP SDK's server, Starlette, the lab's HTTP front.
    "incident_responder.mcp_transport.app",
    "incident_responder.lab.function_url",
]
REAP_SECONDS = 0.2  # how soon an ended child is collected (a function URL's end is seen by its pid going away)


class ForkServer:
    """The fork server's process, as the lab holds it."""

    def __init__(self) -> None:
        self._control, theirs = socket.socketpair()
        self._process = subprocess.Popen(
            # Not `-m`: run as __main__, this module would be a second copy of itself to the handlers.
            [sys.executable, "-c", f"from {__name__} import serve; serve({theirs.fileno()})"],
            stdin=subprocess.PIPE,
            # What the functions print (their JSON logs and EMF metrics; in Lambda, CloudWatch Logs) goes to the
            # lab's stderr: its stdout is the command's own output (`responder run --json`).
            stdout=2,
            pass_fds=(theirs.fileno(),),
            # A process group of its own: a terminal's Ctrl-C reaches the lab only, which stops it (a traceback per
            # process otherwise); a lab that dies without stopping it closes its stdin, which ends it.
            process_group=0,
        )
        theirs.close()
        self._lock = threading.Lock()
        atexit.register(self.stop)

    def stop(self) -> None:
        """Ends the fork server (and any child left) and collects it."""
        with contextlib.suppress(OSError):
            self._control.close()
            if self._process.stdin:
                self._process.stdin.close()
        with contextlib.suppress(Exception):
            self._process.wait(timeout=5)

    def fork(self, entry: str, fd: int, arguments: dict[str, Any], name: str = "") -> int:
        """A child running ``entry`` (``module:function``) with a copy of ``fd`` (the caller keeps and closes its own)
        and ``arguments``, named ``name`` (as ``ps`` and ``top`` show it); its pid."""
        arguments = {"entry": entry, "name": name, **arguments}
        payload = json.dumps(arguments).encode()
        with self._lock:
            # Length first (with the descriptor), then the arguments whole: a stream socket hands a large
            # environment over in pieces.
            socket.send_fds(self._control, [len(payload).to_bytes(8, "big")], [fd])
            self._control.sendall(payload)
            answer = self._control.recv(64)
        if not answer:
            raise FunctionError("Runtime.InitError", "the lab's fork server is gone")
        return int(answer)

    def alive(self) -> bool:
        return self._process.poll() is None


_server: ForkServer | None = None
_server_lock = threading.Lock()


def fork(entry: str, fd: int, arguments: dict[str, Any], name: str = "") -> int:
    """A child of this process's fork server (started on first use, again if it died) running ``entry``
    (``module:function``, called with a copy of ``fd`` and ``arguments``), named ``name``; its pid."""
    global _server
    with _server_lock:
        if _server is None or not _server.alive():
            _server = ForkServer()
        server = _server
    return server.fork(entry, fd, arguments, name)


class ForkedProcess:
    """A function URL's server forked by the fork server, with what the lab uses of ``subprocess.Popen``. Its parent
    is the fork server, which reaps it: its end is seen as its pid going away (no exit status to read)."""

    returncode: int | None = None

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def poll(self) -> int | None:
        if self.returncode is None and not _running(self.pid):
            self.returncode = -1  # ended; its status went to the fork server
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0)
            time.sleep(0.02)
        return -1

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, number: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, number)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie not yet reaped has ended, where /proc says so)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError, IndexError), open(f"/proc/{pid}/stat", "rb") as stat:
        return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    return True


# -- in the fork server ---------------------------------------------------------------------------------------
def _reap(children: set[int]) -> None:
    """Collect ended children (so their CPU time counts in the fork server's, and in the lab's once it ends)."""
    with contextlib.suppress(ChildProcessError):
        while (pid := os.waitpid(-1, os.WNOHANG)[0]) != 0:
            children.discard(pid)


def _receive(control: socket.socket, size: int) -> bytes:
    """Exactly ``size`` bytes from a stream socket (b"" only if it closes first)."""
    chunks, left = [], size
    while left:
        chunk = control.recv(min(left, 1 << 20))
        if not chunk:
            return b""
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _name_process(name: str) -> None:
    """The child's name as ``ps``, ``top`` and /proc show it (Linux keeps 15 bytes): which function a process runs, so
    its CPU and memory can be told apart from its siblings' (all forked from one interpreter, one command line)."""
    if not name or not sys.platform.startswith("linux"):
        return
    # What tells functions apart: the stack's name starts each, CloudFormation's random suffix ends it.
    name = re.sub(r"-[A-Z0-9]{12,13}$", "", name)[-15:]
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME


def _child(fd: int, arguments: dict[str, Any]) -> None:
    """What a forked child runs: its entry point (``module:function``, named by the lab: a worker's life, a function
    URL's server) with the descriptor it was given and its arguments."""
    module, _, function = arguments.pop("entry").partition(":")
    _name_process(arguments.pop("name"))
    getattr(importlib.import_module(module), function)(fd, **arguments)


def serve(control_fd: int) -> None:
    """The fork server's loop."""
    import select

    for module in PRELOAD:
        with contextlib.suppress(ImportError):  # a module renamed since: its child imports it instead
            importlib.import_module(module)
    from incident_responder.lab.botocore_data import parse_models

    parse_models()  # each child's clients then find their service models parsed
    # What was imported stays for every child's life: out of the cyclic collector's sight. Otherwise each child's
    # full collections walk the million objects of boto3, pydantic and LangGraph (over half a warm agent
    # function's CPU), and writing their headers copies the pages the fork shared (the gc module's advice for a
    # server that forks without exec).
    gc.freeze()
    control = socket.socket(fileno=control_fd)
    children: set[int] = set()
    try:
        while True:
            ready, _, _ = select.select([control, sys.stdin], [], [], REAP_SECONDS)
            _reap(children)
            if sys.stdin in ready and not sys.stdin.buffer.read1(1):
                return  # the lab's process is gone
            if control not in ready:
                continue
            header, fds, _, _ = socket.recv_fds(control, 8, 1)
            if not header:
                return
            header += _receive(control, 8 - len(header))
            arguments = json.loads(_receive(control, int.from_bytes(header, "big")))
            pid = os.fork()
            if pid == 0:
                control.close()
                os.setsid()  # a child is no longer part of the fork server's session
                try:
                    _child(fds[0], arguments)
                finally:
                    os._exit(0)
            children.add(pid)
            os.close(fds[0])
            control.sendall(str(pid).encode())
    finally:
        for pid in children:  # none outlives the lab
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
