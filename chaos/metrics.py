"""Fault injection: load another party puts on what the function shares, published as AWS publishes it.

In a real account only AWS writes the ``AWS/`` namespaces; the lab's workloads read the latest datapoint as the
load, so each new datapoint is placed clearly after the latest one (statistics come back to the millisecond).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from incident_responder.core.aws import AwsClients


def latest_datapoint(
    clients: AwsClients,
    namespace: str,
    metric: str,
    dimensions: list[dict[str, str]],
    statistic: str,
    window: timedelta,
) -> tuple[datetime, float] | None:
    """The newest datapoint of the metric within ``window`` (and a few minutes ahead), or None."""
    now = datetime.now(UTC)
    points = clients.get("cloudwatch").get_metric_statistics(
        Namespace=namespace,
        MetricName=metric,
        Dimensions=dimensions,
        StartTime=now - window,
        EndTime=now + timedelta(minutes=5),
        Period=1,
        Statistics=[statistic],
    )["Datapoints"]
    if not points:
        return None
    latest = max(points, key=lambda p: p["Timestamp"])
    return latest["Timestamp"], latest[statistic]


def after(latest: tuple[datetime, float] | None) -> datetime:
    """Now, or clearly after the latest datapoint."""
    now = datetime.now(UTC)
    return max(now, latest[0] + timedelta(seconds=2)) if latest else now


def put_datapoints(clients: AwsClients, namespace: str, data: list[dict[str, Any]]) -> None:
    clients.get("cloudwatch").put_metric_data(Namespace=namespace, MetricData=data)
