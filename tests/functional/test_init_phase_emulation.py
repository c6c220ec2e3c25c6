"""An Init phase longer than Lambda's 10 seconds, as the lab shows it: the platform's INIT_REPORT with Status:
timeout, then the Init phase run again in the invocation within the function's timeout (a suppressed init, which
the REPORT line's duration includes), and nothing naming the injected kind."""

from __future__ import annotations

import re

from chaos import FaultInjector
from incident_responder.account.log_records import ErrorRecord, parse_event
from incident_responder.lab.workloads.data_processor import DataProcessor


def lines(clients, function: str) -> list[str]:
    events = clients.get("logs").filter_log_events(logGroupName=f"/aws/lambda/{function}", interleaved=True)
    return [e["message"] for e in events["events"]]


def test_an_extension_slower_than_the_init_phase_times_the_invocation_out(clients, sample):
    injector = FaultInjector.for_function(sample.function_name, clients=clients)
    injector.init_phase_timeout()
    result = DataProcessor(clients).invoke(2)
    assert [o.status for o in result.invocations] == ["timed_out", "timed_out"]
    assert result.alert["AlarmName"] == f"{sample.function_name}-errors"
    logged = lines(clients, sample.function_name)
    init = [m for m in logged if m.startswith("INIT_REPORT")]
    assert init == ["INIT_REPORT Init Duration: 10000.00 ms\tPhase: init\tStatus: timeout"] * 2
    record = parse_event(init[0])
    assert isinstance(record, ErrorRecord) and record.message == "Phase: init Status: timeout"
    assert sum(m.endswith("Task timed out after 30.00 seconds") for m in logged) == 2
    reports = [m for m in logged if m.startswith("REPORT")]
    # The suppressed init is in the duration: no Init Duration of its own; no handler line was written.
    assert all("Init Duration" not in m and m.endswith("Status: timeout") for m in reports)
    assert not any(m.startswith("[INFO]") for m in logged)
    assert not re.search(r"chaos|inject|metrics-agent", "\n".join(logged), re.IGNORECASE)

    injector.restore()
    healthy = DataProcessor(clients).invoke(1)
    assert healthy.healthy and healthy.alert is None


def test_an_init_phase_over_10_seconds_within_the_timeout_succeeds_late(clients, sample):
    FaultInjector.for_function(sample.function_name, clients=clients).init_phase_timeout(seconds=12)
    result = DataProcessor(clients).invoke(1)
    (outcome,) = result.invocations
    assert outcome.status == "succeeded" and outcome.duration_ms >= 12_000
    logged = lines(clients, sample.function_name)
    assert logged[0] == "INIT_REPORT Init Duration: 10000.00 ms\tPhase: init\tStatus: timeout"
    assert result.alert is None
