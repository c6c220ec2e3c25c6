"""The lab's in-process dispatch swaps os.environ around a handler; the rest of the process must never see
the lab's own variables go missing while it does.

moto's Task states read ``MOTO_PORT`` from os.environ for every task (``moto.settings.moto_server_port``);
when an in-process handler's call restored the environment by clearing it first, a Step Functions task
that ran in that window called ``localhost:5000`` and the execution failed (an alarm storm in the lab,
where every notification runs the ingest handler, ended one incident's execution FAILED before it was
investigated).
"""

from __future__ import annotations

import os
import sys
import threading

from incident_responder.lab.engine import LambdaDispatcher


def test_an_in_process_call_never_leaves_other_threads_an_empty_environment(monkeypatch):
    monkeypatch.setenv("LAB_ONLY_VARIABLE", "kept")
    for i in range(100):  # a lab's environment is large: the restore has many variables to put back
        monkeypatch.setenv(f"LAB_FILLER_{i}", str(i))
    dispatcher = LambdaDispatcher(workers=False)

    def handler(event, context):
        os.environ["SET_BY_THE_HANDLER"] = "1"  # what a handler sets is gone after its call
        return os.environ["FUNCTION_VARIABLE"]

    dispatcher.register("ingest", handler, {"FUNCTION_VARIABLE": "fn", "LAB_FILLER_0": "overridden"})
    missing = []
    done = threading.Event()

    def reader():
        while not done.is_set():
            if os.environ.get("LAB_ONLY_VARIABLE") != "kept":
                missing.append(1)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as a loaded machine does
    thread = threading.Thread(target=reader)
    thread.start()
    try:
        results = {dispatcher.invoke("ingest", {}) for _ in range(300)}
    finally:
        done.set()
        thread.join()
        sys.setswitchinterval(interval)
    assert results == {"fn"}
    assert missing == [], f"another thread saw the lab's environment without LAB_ONLY_VARIABLE {len(missing)} times"
    # Restored exactly: the function's variables and the handler's own are gone, the overridden one is back.
    assert "FUNCTION_VARIABLE" not in os.environ and "SET_BY_THE_HANDLER" not in os.environ
    assert os.environ["LAB_FILLER_0"] == "0"
