"""Fill a log group with many events, for volume tests and the logs benchmarks."""

from __future__ import annotations

import time

from incident_responder.core.aws import AwsClients

BATCH = 10_000  # PutLogEvents' per-call limit


def fill_log_group(
    clients: AwsClients, group: str, total: int, *, streams: int = 20, message_len: int = 700, spacing_ms: int = 5
) -> None:
    """``total`` events over ``streams`` streams, ending a second ago; message ``s<stream> e<index> xxx...``.

    Stream ``s`` is shifted by ``s`` ms so streams interleave in time: the newest event is the last one
    of the last stream, and the newest 30 come from several streams.
    """
    logs = clients.get("logs")
    logs.create_log_group(logGroupName=group)
    per_stream = total // streams
    end = int(time.time() * 1000) - 1000 - streams
    for s in range(streams):
        name = f"2026/11/23/[$LATEST]{s:032x}"
        logs.create_log_stream(logGroupName=group, logStreamName=name)
        for offset in range(0, per_stream, BATCH):
            count = min(BATCH, per_stream - offset)
            logs.put_log_events(
                logGroupName=group,
                logStreamName=name,
                logEvents=[
                    {
                        "timestamp": end - (per_stream - 1 - (offset + i)) * spacing_ms + s,
                        "message": f"s{s} e{offset + i} " + "x" * message_len,
                    }
                    for i in range(count)
                ],
            )
