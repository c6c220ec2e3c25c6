"""Lambda's execution environments, for the lab: each function runs in worker processes of its own.

A worker is one execution environment: a process with the function's environment variables, its handler
imported once (the cold start), then one request at a time. A function gets another worker when every one
it has is busy, up to its concurrency limit, so incidents run in parallel as they would in Lambda, and no
handler shares ``os.environ`` or module state with another function.

Workers are forked from the lab's fork server (:mod:`.fork_server`), which has already imported the heavy packages
(boto3, pydantic, LangChain, LangGraph, Powertools): that is the lab's SnapStart. The handler module itself, and
everything that reads the environment at import, is imported in the worker after its environment is set.

What the lab does in-process for a handler (the verify function's health probe: a burst of the lab's
emulated workload, which reads moto's state in the lab's process) the worker asks its host for over its pipe:
:func:`host_call`.
"""

from __future__ import annotations

import contextlib
import gc
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

from incident_responder.lab import fork_server
from incident_responder.lab.errors import FunctionError

# Lambda's default cap per function is the account's concurrency; the lab caps a function's workers here.
DEFAULT_MAX_WORKERS = 8


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
        ours, theirs = socket.socketpair()
        arguments = {
            "handler": self.handler,
            "environment": environment,
            "host": sorted(self.host_functions),
            "context": [self.name, self.timeout_seconds, self.memory_mb],
        }
        try:
            pid = fork_server.fork(f"{__name__}:serve_worker", theirs.fileno(), arguments, self.name)
        finally:
            theirs.close()
        conn = Connection(ours.detach())
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


def serve_worker(fd: int, handler: str, environment: dict[str, str], host: list[str], context: list[Any]) -> None:
    """A worker's life (forked by the fork server, ``fd`` its end of the pipe to the lab): the function's environment,
    its handler imported (init), then requests until closed."""
    global _host
    from incident_responder.lab.lambda_context import LambdaContext

    conn = _host = Connection(fd)
    os.environ.clear()
    os.environ.update(environment)
    try:
        if "workload_burst" in host:
            from incident_responder.core.members import function_key
            from incident_responder.remediation.health import burst_probe, set_health_probe

            # A member account's function by its ARN: the lab runs that member's workload.
            set_health_probe(
                burst_probe(lambda clients, function: host_call("workload_burst", function_key(clients, function)))
            )
        module_name, _, attribute = handler.rpartition(".")
        function = getattr(importlib.import_module(module_name), attribute)
    except BaseException as exc:  # noqa: BLE001 - Lambda reports an init failure as Runtime.InitError
        conn.send(("init-error", {**_error(exc), "errorType": "Runtime.InitError"}))
        return
    gc.freeze()  # what init made lives as long as the environment: out of its collector's sight (lab/heap.py)
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
