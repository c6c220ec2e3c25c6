"""Benchmark: the answer size of get_function_metrics, get_recent_changes and get_dependencies as what they read grows
(100 and 100,000 data points each: AWS/Lambda datapoints, CloudTrail events, AWS/SQS and AWS/DynamoDB datapoints).

Each tool answers with bounded lists (at most 12 points a series, 20 events, capped dependencies) and says how
much it left out, so the answer's size stays flat however much the account holds. Prints one row per tool and size.
Run with `.venv/bin/python scripts/bench_signals.py`. The builders are shared with tests/functional/test_signals_tools.py.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from incident_responder.core.aws import AwsClients
from incident_responder.investigation import diagnostics
from incident_responder.lab import Lab

SIZES = (100, 100_000)
FUNCTION = "data-processor"
BENCH_QUEUE = "bench-signals-queue"
BENCH_TABLE = "bench-signals-orders"
# The metrics a busy function publishes, each a minute of the last hour: (name, unit, value of the minute's points).
METRICS = (
    ("Invocations", "Count", lambda minute: 1.0),
    ("Errors", "Count", lambda minute: 1.0 if minute < 10 else 0.0),  # errors in the last 10 minutes
    ("Duration", "Milliseconds", lambda minute: 250.0 + minute),
    ("ConcurrentExecutions", "Count", lambda minute: 1.0),
)


def answer_bytes(result: Any) -> int:
    """The answer as the MCP server sends it: the Compact JSON of the result."""
    return len(json.dumps(result.model_dump(mode="json"), separators=(",", ":")))


def fill_metrics(clients: AwsClients, count: int, function: str = FUNCTION, minutes: int = 60) -> None:
    """``count`` AWS/Lambda datapoints for ``function`` over the last ``minutes``, spread over METRICS and the minutes:
    each minute of each metric one PutMetricData entry whose Values/Counts carry its share (moto keeps every one)."""
    now = datetime.now(UTC)
    entries = [(name, unit, value, minute) for name, unit, value in METRICS for minute in range(1, minutes + 1)]
    share, extra = divmod(count, len(entries))
    data = []
    for index, (name, unit, value, minute) in enumerate(entries):
        points = share + (1 if index < extra else 0)
        if not points:
            continue
        data.append(
            {
                "MetricName": name,
                "Dimensions": [{"Name": "FunctionName", "Value": function}],
                "Timestamp": now - timedelta(minutes=minute),
                "Values": [value(minute)],
                "Counts": [float(points)],
                "Unit": unit,
            }
        )
    cloudwatch = clients.get("cloudwatch")
    for first in range(0, len(data), 500):
        cloudwatch.put_metric_data(Namespace="AWS/Lambda", MetricData=data[first : first + 500])


def fill_trail(lab: Lab, count: int, function: str = FUNCTION, hours: int = 24) -> None:
    """``count`` management events on ``function`` over the last ``hours``, recorded straight into the lab's trail
    (made large enough to keep them all)."""
    lab.trail.resize(max(count, len(lab.trail)) + 1000)
    now = time.time()
    step = hours * 3600 / max(count, 1)
    for index in range(count):
        lab.trail.record(
            "UpdateFunctionConfiguration20150331v2" if index % 2 else "PutFunctionConcurrency20171031",
            "lambda.amazonaws.com",
            [("AWS::Lambda::Function", function)],
            access_key_id="AKIACHAOSBENCH" if index % 3 == 0 else "testing",
            event_time=now - hours * 3600 + index * step,
        )


def fill_dependencies(clients: AwsClients, count: int, function: str = FUNCTION, messages: int = 100) -> str:
    """A queue and a table the function's environment names, with ``count`` datapoints over the last hour split
    between the queue's AWS/SQS ApproximateAgeOfOldestMessage and the table's AWS/DynamoDB Read/WriteThrottleEvents,
    and ``messages`` messages in the queue (put into the lab's moto directly). Returns the queue's URL.

    The queue's depth is not what grows: moto recomputes every attribute of a queue, message by message, for each
    attribute GetQueueAttributes names (some 4 s a name at 100,000 messages), which says nothing of the tool."""
    from moto.sqs.models import Message, sqs_backends

    sqs = clients.get("sqs")
    url = sqs.create_queue(QueueName=BENCH_QUEUE)["QueueUrl"]
    queue = sqs_backends[url.split("/")[-2]][clients.region].queues[BENCH_QUEUE]
    queue._messages.extend(Message(str(uuid.uuid4()), f"order {i}") for i in range(messages))
    clients.get("dynamodb").create_table(
        TableName=BENCH_TABLE,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    now = datetime.now(UTC)
    series = (
        ("AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", BENCH_QUEUE, "Seconds"),
        ("AWS/DynamoDB", "ReadThrottleEvents", "TableName", BENCH_TABLE, "Count"),
        ("AWS/DynamoDB", "WriteThrottleEvents", "TableName", BENCH_TABLE, "Count"),
    )
    entries = [(s, minute) for s in series for minute in range(1, 61)]
    share, extra = divmod(count, len(entries))
    by_namespace: dict[str, list[dict[str, Any]]] = {}
    for index, ((namespace, name, dimension, value, unit), minute) in enumerate(entries):
        points = share + (1 if index < extra else 0)
        if points:
            by_namespace.setdefault(namespace, []).append(
                {
                    "MetricName": name,
                    "Dimensions": [{"Name": dimension, "Value": value}],
                    "Timestamp": now - timedelta(minutes=minute),
                    "Values": [float(minute)],
                    "Counts": [float(points)],
                    "Unit": unit,
                }
            )
    cloudwatch = clients.get("cloudwatch")
    for namespace, data in by_namespace.items():
        for first in range(0, len(data), 500):
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[first : first + 500])
    lam = clients.get("lambda")
    variables = lam.get_function_configuration(FunctionName=function).get("Environment", {}).get("Variables", {})
    variables = {**variables, "WORK_QUEUE_URL": url, "ORDERS_TABLE": BENCH_TABLE}
    lam.update_function_configuration(FunctionName=function, Environment={"Variables": variables})
    lam.get_waiter("function_updated").wait(FunctionName=function, WaiterConfig={"Delay": 1, "MaxAttempts": 30})
    return url


def measure(lab: Lab, clients: AwsClients, size: int) -> list[tuple[str, int, int, float, Any]]:
    """(tool, size, answer bytes, ms, result) of each tool against a fresh sample account holding ``size`` points of
    each kind."""
    from incident_responder.account.baseline import record_baseline
    from incident_responder.lab.account.data_processor import create_sample_account

    lab.reset()
    create_sample_account(clients)
    record_baseline(clients, FUNCTION)
    fill_metrics(clients, size)
    fill_trail(lab, size)
    fill_dependencies(clients, size)
    rows = []
    for tool in ("get_function_metrics", "get_recent_changes", "get_dependencies"):
        started = time.perf_counter()
        result = getattr(diagnostics, tool)(clients, FUNCTION)
        elapsed = (time.perf_counter() - started) * 1000
        assert result.error is None, (tool, result.error)
        rows.append((tool, size, answer_bytes(result), elapsed, result))
    return rows


def main() -> int:
    rows = []
    with Lab() as lab:
        os.environ.update(lab.env)
        clients = AwsClients()
        for size in SIZES:
            rows += measure(lab, clients, size)
    print(f"{'tool':<22} {'data points':>12} {'answer bytes':>13} {'ms':>8}")
    for tool, size, nbytes, ms, _ in rows:
        print(f"{tool:<22} {size:>12,} {nbytes:>13,} {ms:>8.0f}")
    print(
        "(moto lab on loopback; data points: AWS/Lambda datapoints, CloudTrail events, the dependencies' AWS/SQS and "
        "AWS/DynamoDB datapoints)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
