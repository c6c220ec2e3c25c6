"""Benchmark: get_recent_logs time and response size as the log group grows (100 / 10,000 / 100,000 events).

Prints one row per size: the tool reads the newest 30 events and returns them as at most 30 lines of at
most 500 characters each (repeats folded into one line with their count), so the response size stays
bounded however large the group is. Run with `make bench-logs`.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

from incident_responder.core.aws import AwsClients
from incident_responder.investigation.diagnostics import get_recent_logs
from incident_responder.lab import Lab
from incident_responder.lab.log_volume import fill_log_group

SIZES = (100, 10_000, 100_000)
STREAMS = 20  # like a busy function: many execution environments, each its own stream
REPEATS = 5


def main() -> int:
    rows = []
    with Lab() as lab:
        os.environ.update(lab.env)
        clients = AwsClients()
        for size in SIZES:
            group_name = f"bench-{size}"
            fill_log_group(clients, f"/aws/lambda/{group_name}", size, streams=STREAMS)
            get_recent_logs(clients, group_name)  # warm the clients
            timings, sizes = [], []
            for _ in range(REPEATS):
                started = time.perf_counter()
                result = get_recent_logs(clients, group_name)
                timings.append((time.perf_counter() - started) * 1000)
                sizes.append(len(json.dumps(result.model_dump(mode="json"))))
            # The group's lines differ only in their numbers: the 30 events fold into one line with their count.
            assert result.error is None and sum(e.count for e in result.events) == 30
            rows.append((size, statistics.median(timings), max(sizes), len(result.events)))
    print(f"{'events in group':>16} {'median ms':>10} {'response bytes':>15} {'lines returned':>16}")
    for size, ms, nbytes, events in rows:
        print(f"{size:>16,} {ms:>10.1f} {nbytes:>15,} {events:>16}")
    print(f"(moto lab on loopback, {STREAMS} streams, 700-char messages, median of {REPEATS} calls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
