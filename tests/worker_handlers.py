"""Handlers the lab's worker processes run in tests/functional/test_workers.py (imported in the worker)."""

from __future__ import annotations

import os
import time
from typing import Any

IMPORTED_WITH = os.environ.get("WHO")  # read at import, as a handler's settings are


class OrdersUnavailableError(Exception):
    pass


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if event.get("sleep"):
        started = time.time()
        time.sleep(event["sleep"])
        return {"pid": os.getpid(), "started": started, "ended": time.time()}
    if event.get("raise"):
        raise OrdersUnavailableError(event["raise"])
    if event.get("exit"):
        os._exit(3)
    if event.get("host"):
        from incident_responder.lab.workers import host_call

        return {"host": host_call("echo", event["host"])}
    import gc
    from pathlib import Path

    return {
        "pid": os.getpid(),
        "process_name": Path("/proc/self/comm").read_text().strip() if Path("/proc/self/comm").exists() else None,
        "frozen": gc.get_freeze_count(),
        "who": os.environ.get("WHO"),
        "imported_with": IMPORTED_WITH,
        "function": context.function_name,
        "request_id": context.aws_request_id,
        "remaining_ms": context.get_remaining_time_in_millis(),
    }


def broken_at_init(event: dict[str, Any], context: Any) -> None:  # never reached: see the module below
    raise AssertionError("unreachable")
