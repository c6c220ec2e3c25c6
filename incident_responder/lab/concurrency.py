"""The account's concurrency as Lambda publishes it, and what the lab's workloads read of it.

moto keeps no count of running executions. Lambda publishes each function's ``AWS/Lambda
ConcurrentExecutions`` (and the account's, without a dimension); chaos publishes another function's
load the same way (``chaos/kinds/noisy_neighbor.py``), and a workload without reserved concurrency is throttled
when the others' latest load leaves nothing of the account's unreserved concurrency.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from incident_responder.core.aws import AwsClients

NAMESPACE = "AWS/Lambda"
METRIC = "ConcurrentExecutions"
# A function's load counts while its latest datapoint is this recent.
FRESH = timedelta(minutes=15)


def _latest(clients: AwsClients, dimensions: list[dict[str, str]]) -> tuple[datetime, float] | None:
    now = datetime.now(UTC)
    points = clients.get("cloudwatch").get_metric_statistics(
        Namespace=NAMESPACE,
        MetricName=METRIC,
        Dimensions=dimensions,
        StartTime=now - FRESH,
        EndTime=now + timedelta(minutes=5),
        Period=1,
        Statistics=["Maximum"],
    )["Datapoints"]
    if not points:
        return None
    latest = max(points, key=lambda p: p["Timestamp"])
    return latest["Timestamp"], latest["Maximum"]


def in_use_by_others(clients: AwsClients, function_name: str) -> float:
    """The concurrency other functions hold now: the sum of their latest fresh ``ConcurrentExecutions``."""
    total = 0.0
    paginator = clients.get("cloudwatch").get_paginator("list_metrics")
    for page in paginator.paginate(Namespace=NAMESPACE, MetricName=METRIC):
        for metric in page.get("Metrics", []):
            dims = metric.get("Dimensions", [])
            if len(dims) != 1 or dims[0]["Name"] != "FunctionName" or dims[0]["Value"] == function_name:
                continue
            latest = _latest(clients, dims)
            total += latest[1] if latest else 0.0
    return total


def unreserved_limit(clients: AwsClients) -> int:
    """The account's unreserved concurrency (what functions without a reservation share)."""
    limit = clients.get("lambda").get_account_settings().get("AccountLimit", {})
    return int(limit.get("UnreservedConcurrentExecutions") or limit.get("ConcurrentExecutions") or 1000)
