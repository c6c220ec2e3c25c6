"""Lambda's execution environments, for the lab: each function runs in worker processes of its own.

A worker is one execution environment: a process with the function's environment variables, its handler
imported once (the cold start), then one request at a time. A function gets another worker when every one
it has is busy, up to its concurrency limit, so incidents run in parallel as they would in Lambda, and no
handler shares ``os.environ`` or module state with another function.

Workers are forked from a fork server that has already imported the heavy third-party packages (boto3,
pydantic, LangChain, LangGraph, Powertools): that is the lab's SnapStart. The handler module itself, and
everything that reads the environment at import, is imported in the worker after its environment is set.

What the lab does in-process for a handler (the verify function's health probe: a burst of the lab's
emulated workload, which reads moto's state in the lab's process) the worker asks its host for over its pipe:
:func:`host_call`.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from incident_responder.lab.errors import FunctionError

# Imported by the fork server before it forks any worker: the third-party packages and the project's modules
# the handlers use (none of which reads the environment at import). The handler modules themselves (their
# Logger, settings and clients read the function's environment) are imported in each worker.
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
]
# Lambda's default cap per function is the account's concurrency; the lab caps a function's workers here.
DEFAULT_MAX_WORKERS = 8
_context: Any = None
_context_lock = threading.Lock()


class _Zygote:
    """The fork server: a process that imported :data:`PRELOAD` and forks a worker per request.

    (multiprocessing's own fork server would import the caller's ``__main__`` again in every worker.)
    Requests come over a Unix socket: the worker's end of a socket pair (passed as a file descriptor) and the
    worker's arguments; the answer is the worker's pid. It exits when this process's end of its stdin closes.
    """

    def __init__(self) -> None:
        import subprocess
        import sys

        self._control, theirs = socket.socketpair()
        self._process = subprocess.Popen(
            # Not `-m`: run as __main__, this module would be a second copy of itself to the handlers.
            [sys.executable, "-c", f"from {__name__} import _zygote_main; _zygote_main({theirs.fileno()})"],
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
        """Ends the fork server (and any worker left) and collects it."""
        with contextlib.suppress(OSError):
            self._control.close()
            if self._process.stdin:
                self._process.stdin.close()
        with contextlib.suppress(Exception):
            self._process.wait(timeout=5)

    def fork(self, arguments: dict[str, Any]) -> tuple[int, Connection]:
        ours, theirs = socket.socketpair()
        payload = json.dumps(arguments).encode()
        try:
            with self._lock:
                # Length first (with the descriptor), then the arguments whole: a stream socket hands a large
                # environment over in pieces.
                socket.send_fds(self._control, [len(payload).to_bytes(8, "big")], [theirs.fileno()])
                self._control.sendall(payload)
                answer = self._control.recv(64)
        finally:
            theirs.close()
        if not answer:
            raise FunctionError("Runtime.InitError", "the lab's fork server is gone")
        return int(answer), Connection(ours.detach())

    def alive(self) -> bool:
        return self._process.poll() is None


_zygote: _Zygote | None = None
_zygote_lock = threading.Lock()


def _fork(arguments: dict[str, Any]) -> tuple[int, Connection]:
    global _zygote
    with _zygote_lock:
        if _zygote is None or not _zygote.alive():
            _zygote = _Zygote()
        zygote = _zygote
    return zygote.fork(arguments)


@dataclass
class _Worker:
    pid: int
    conn: Connection


@dataclass
class WorkerPool:
    """The execution environments of one function."""

    name: str
    handler: str  # "module.attribute", as the template's Handler says
    environment: dict[str, str]
    timeout_seconds: int
    memory_mb: int
    host_functions: dict[str, Callable[..., Any]] = field(default_factory=dict)
    max_workers: int = DEFAULT_MAX_WORKERS
    cold_starts: list[float] = field(default_factory=list)  # init time of each worker started, ms
    _idle: list[_Worker] = field(default_factory=list)
    _count: int = 0
    _closed: bool = False
    _lock: threading.Condition = field(default_factory=threading.Condition)

    def invoke(self, event: dict[str, Any], request_id: str) -> Any:
        """Run the handler in an idle worker (a new one if none is idle and the cap allows; else wait)."""
        worker = self._acquire()
        healthy = False
        try:
            worker.conn.send(("invoke", (event, request_id)))
            answer = self._answer(worker)
            # The runtime caught the handler's exception: the environment serves the next request.
            healthy = True
        finally:
            self._release(worker, healthy)
        if isinstance(answer, FunctionError):
            raise answer
        return answer

    def _answer(self, worker: _Worker) -> Any:
        deadline = time.monotonic() + self.timeout_seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not worker.conn.poll(left):
                # Lambda stops a function at its timeout; the environment is not reused.
                raise FunctionError("Sandbox.Timedout", f"Task timed out after {self.timeout_seconds:.2f} seconds")
            try:
                kind, payload = worker.conn.recv()
            except EOFError:
                raise FunctionError("Runtime.ExitError", f"{self.name}: the worker process exited") from None
            if kind == "result":
                return json.loads(payload)
            if kind == "error":
                return FunctionError(payload["errorType"], payload["errorMessage"], payload["stackTrace"])
            if kind == "host":
                name, args = payload
                try:
                    worker.conn.send(("host-result", self.host_functions[name](*args)))
                except Exception as exc:  # noqa: BLE001 - reported to the worker, which raises it there
                    worker.conn.send(("host-error", f"{type(exc).__name__}: {exc}"))

    def _acquire(self) -> _Worker:
        with self._lock:
            while True:
                if self._closed:
                    raise FunctionError("Runtime.ExitError", f"{self.name}: the lab stopped")
                if self._idle:
                    return self._idle.pop()
                if self._count < self.max_workers:
                    self._count += 1
                    break
                self._lock.wait()
        try:
            return self._start()
        except BaseException:
            with self._lock:
                self._count -= 1
                self._lock.notify()
            raise

    def _release(self, worker: _Worker, healthy: bool) -> None:
        with self._lock:
            if healthy and not self._closed:
                self._idle.append(worker)
            else:
                self._count -= 1
                _stop(worker)
            self._lock.notify()

    def _start(self) -> _Worker:
        environment = {
            **self.environment,
            "AWS_LAMBDA_FUNCTION_NAME": self.name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(self.memory_mb),
        }
        started = time.perf_counter()
        pid, conn = _fork(
            {
                "handler": self.handler,
                "environment": environment,
                "host": sorted(self.host_functions),
                "context": [self.name, self.timeout_seconds, self.memory_mb],
            }
        )
        worker = _Worker(pid, conn)
        try:
            if not conn.poll(60):
                raise FunctionError("Runtime.InitError", f"{self.name}: the worker did not start within 60 s")
            kind, payload = conn.recv()
        except EOFError:
            _stop(worker)
            raise FunctionError("Runtime.InitError", f"{self.name}: the worker exited while starting") from None
        except BaseException:
            _stop(worker)
            raise
        if kind != "ready":
            _stop(worker)
            raise FunctionError(payload["errorType"], payload["errorMessage"], payload["stackTrace"])
        self.cold_starts.append((time.perf_counter() - started) * 1000)
        return worker

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._lock.notify_all()
        for worker in idle:
            _stop(worker)


def _stop(worker: _Worker) -> None:
    with contextlib.suppress(OSError):
        worker.conn.close()
    with contextlib.suppress(ProcessLookupError):
        os.kill(worker.pid, signal.SIGKILL)  # the fork server reaps it


# -- in the worker ---------------------------------------------------------------------------------------
_host: Connection | None = None


def host_call(name: str, *args: Any) -> Any:
    """Ask the lab's process to run one of its host functions for this handler (one request at a time)."""
    if _host is None:
        raise RuntimeError("host_call outside a lab worker")
    _host.send(("host", (name, args)))
    kind, payload = _host.recv()
    if kind == "host-error":
        raise RuntimeError(f"lab host function {name} failed: {payload}")
    return payload


def _error(exc: BaseException) -> dict[str, Any]:
    return {
        "errorType": type(exc).__name__,
        "errorMessage": str(exc),
        "stackTrace": traceback.format_tb(exc.__traceback__),
    }


def _serve(conn: Connection, handler: str, environment: dict[str, str], host: list[str], context: list[Any]) -> None:
    """A worker's life: the function's environment, its handler imported (init), then requests until closed."""
    global _host
    from incident_responder.lab.lambda_context import LambdaContext

    _host = conn
    os.environ.clear()
    os.environ.update(environment)
    try:
        if "workload_burst" in host:
            from incident_responder.remediation.health import burst_probe, set_health_probe

            set_health_probe(burst_probe(lambda clients, function: host_call("workload_burst", function)))
        module_name, _, attribute = handler.rpartition(".")
        function = getattr(importlib.import_module(module_name), attribute)
    except BaseException as exc:  # noqa: BLE001 - Lambda reports an init failure as Runtime.InitError
        conn.send(("init-error", {**_error(exc), "errorType": "Runtime.InitError"}))
        return
    conn.send(("ready", None))
    name, timeout, memory = context
    while True:
        try:
            kind, payload = conn.recv()
        except (EOFError, OSError):
            return
        if kind != "invoke":
            continue
        event, request_id = payload
        try:
            result = function(event, LambdaContext(name, timeout, memory, aws_request_id=request_id))
            conn.send(("result", json.dumps(result, default=str)))
        except Exception as exc:  # noqa: BLE001 - the Python runtime's "Unhandled" error envelope
            conn.send(("error", _error(exc)))


def _reap(workers: set[int]) -> None:
    """Collect ended workers (so their CPU time counts in the fork server's, and in the lab's once it ends)."""
    with contextlib.suppress(ChildProcessError):
        while (pid := os.waitpid(-1, os.WNOHANG)[0]) != 0:
            workers.discard(pid)


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


def _zygote_main(control_fd: int) -> None:
    """The fork server's loop."""
    import select
    import sys

    for module in PRELOAD:
        with contextlib.suppress(ImportError):  # a module renamed since: its worker imports it instead
            importlib.import_module(module)
    from incident_responder.lab.botocore_data import parse_models

    parse_models()  # each worker's clients then find their service models parsed
    control = socket.socket(fileno=control_fd)
    workers: set[int] = set()
    try:
        while True:
            ready, _, _ = select.select([control, sys.stdin], [], [], 1.0)
            _reap(workers)
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
                os.setsid()  # a worker is no longer part of the fork server's session
                try:
                    _serve(Connection(fds[0]), **arguments)
                finally:
                    os._exit(0)
            workers.add(pid)
            os.close(fds[0])
            control.sendall(str(pid).encode())
    finally:
        for pid in workers:  # none outlives the lab
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in workers:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
