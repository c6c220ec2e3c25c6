"""The lab's execution environments (incident_responder/lab/workers.py): one process per environment, the
function's own environment variables, one request at a time, more environments under concurrency, and
Lambda's error envelope for what goes wrong."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from incident_responder.lab.engine import LambdaDispatcher
from incident_responder.lab.errors import FunctionError
from incident_responder.lab.workers import WorkerPool

HANDLER = "tests.worker_handlers.handler"


def pool(name: str = "orders", who: str = "orders", **options) -> WorkerPool:
    environment = {**os.environ, "WHO": who}
    return WorkerPool(name, HANDLER, environment, options.pop("timeout", 30), 256, **options)


def test_each_function_sees_its_own_environment_in_its_own_process():
    orders, queue = pool("orders", "orders"), pool("queue", "queue")
    try:
        a, b = orders.invoke({}, "r-1"), queue.invoke({}, "r-2")
        assert (a["who"], a["imported_with"], a["function"]) == ("orders", "orders", "orders")
        assert (b["who"], b["imported_with"], b["function"]) == ("queue", "queue", "queue")
        assert a["pid"] != b["pid"] != os.getpid()
        assert a["process_name"] in ("orders", None)  # as ps and top show it (Linux)
        assert a["request_id"] == "r-1" and 0 < a["remaining_ms"] <= 30_000
        # Warm: the next request goes to the same environment, no new cold start.
        assert orders.invoke({}, "r-3")["pid"] == a["pid"]
        assert len(orders.cold_starts) == 1
    finally:
        orders.close()
        queue.close()


def test_an_environment_starts_with_what_the_fork_server_imported_frozen():
    """The fork server's imports (boto3, pydantic, LangGraph ...) are out of each worker's garbage collector's
    sight: its full collections walked them all, over half a warm agent function's CPU."""
    orders = pool("frozen")
    try:
        assert orders.invoke({}, "r-1")["frozen"] > 100_000
    finally:
        orders.close()


def test_a_large_environment_reaches_the_worker_whole():
    """The lab hands its whole environment to each worker; a shell's can be far beyond a socket's buffer."""
    large = WorkerPool("big", HANDLER, {**os.environ, "WHO": "big", "PADDING": "x" * 300_000}, 30, 256)
    try:
        assert large.invoke({}, "r-1")["who"] == "big"
    finally:
        large.close()


def test_concurrent_requests_get_more_environments_up_to_the_cap():
    capped = pool(max_workers=2)
    try:
        with ThreadPoolExecutor(4) as threads:
            runs = list(threads.map(lambda i: capped.invoke({"sleep": 0.5}, f"r-{i}"), range(4)))
        pids = {r["pid"] for r in runs}
        assert len(pids) == 2  # never more environments than the cap
        first, second = sorted(runs, key=lambda r: r["started"])[:2]
        assert second["started"] < first["ended"]  # two ran at the same time
        for pid in pids:  # one request at a time per environment
            mine = sorted((r for r in runs if r["pid"] == pid), key=lambda r: r["started"])
            assert all(later["started"] >= earlier["ended"] for earlier, later in zip(mine, mine[1:], strict=False))
    finally:
        capped.close()


def test_a_handler_exception_keeps_its_type_and_the_environment_lives_on():
    p = pool()
    try:
        pid = p.invoke({}, "r-1")["pid"]
        with pytest.raises(FunctionError) as failed:
            p.invoke({"raise": "table orders is unavailable"}, "r-2")
        assert failed.value.error_type == "OrdersUnavailableError"
        assert str(failed.value) == "table orders is unavailable"
        assert any("worker_handlers.py" in line for line in failed.value.stack)
        assert p.invoke({}, "r-3")["pid"] == pid
    finally:
        p.close()


def test_a_timeout_or_a_crash_replaces_the_environment():
    p = pool(timeout=1)
    try:
        pid = p.invoke({}, "r-1")["pid"]
        with pytest.raises(FunctionError) as timed_out:
            p.invoke({"sleep": 5}, "r-2")
        assert timed_out.value.error_type == "Sandbox.Timedout"
        after_timeout = p.invoke({}, "r-3")["pid"]
        assert after_timeout != pid
        with pytest.raises(FunctionError) as crashed:
            p.invoke({"exit": True}, "r-4")
        assert crashed.value.error_type == "Runtime.ExitError"
        assert p.invoke({}, "r-5")["pid"] not in (pid, after_timeout)
        assert len(p.cold_starts) == 3
    finally:
        p.close()


def test_an_import_failure_is_an_init_error():
    broken = WorkerPool("broken", "tests.no_such_module.handler", dict(os.environ), 30, 128)
    try:
        with pytest.raises(FunctionError) as failed:
            broken.invoke({}, "r-1")
        assert failed.value.error_type == "Runtime.InitError"
        assert "no_such_module" in str(failed.value)
    finally:
        broken.close()


def test_a_handler_can_ask_the_lab_process_for_what_only_it_has():
    asked: list[str] = []
    p = pool(host_functions={"echo": lambda text: asked.append(text) or text.upper()})
    try:
        assert p.invoke({"host": "burst"}, "r-1") == {"host": "BURST"}
        assert asked == ["burst"]
    finally:
        p.close()


def test_the_dispatcher_reports_a_worker_failure_as_lambda_does():
    dispatcher = LambdaDispatcher(workers=True)
    dispatcher.register("orders", lambda e, c: None, {"WHO": "orders"}, timeout_seconds=30, handler_path=HANDLER)
    try:
        answer = dispatcher._dispatch({"FunctionName": "orders", "Payload": '{"raise": "boom"}'}, "us-east-1", None)
        assert answer["FunctionError"] == "Unhandled"
        assert answer["Payload"]["errorType"] == "OrdersUnavailableError"
        assert dispatcher.invoke("orders", {})["who"] == "orders"
        assert list(dispatcher.cold_starts()) == ["orders"]
    finally:
        dispatcher.close()
