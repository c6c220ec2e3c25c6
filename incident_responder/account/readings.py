"""INVESTIGATING: what the metrics, changes and dependencies tools share (CloudWatch, AWS times and figures).

They read what the account says around a failing function, beyond its own configuration: its metrics (and the
account's concurrency, :mod:`incident_responder.account.metrics`), what changed recently (CloudTrail, the
function's versions and aliases: :mod:`~incident_responder.account.changes`), and the state of what it depends on
(queues, secrets, parameters, keys, tables: :mod:`~incident_responder.account.dependencies`).

Read-only, like every diagnostics tool (:mod:`incident_responder.investigation.diagnostics` registers these three): a result
sets ``error`` when the function itself cannot be read, and lists in ``gaps`` the parts that could not be read
(the rest stands). Answers stay small whatever the volume behind them: series have at most
:data:`~incident_responder.account.metrics.MAX_POINTS` points, lists are capped and say how many they left out. The function's environment is read
only to find the resources it names: a value is shown only as the resource identifier it was recognised as
(an SQS queue, a Secrets Manager secret, an SSM parameter, a DynamoDB table), never otherwise.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from incident_responder.core.aws import AwsClients


def _code(exc: Exception) -> str:
    return exc.response.get("Error", {}).get("Code", "") if isinstance(exc, ClientError) else ""


def _aws_time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00").replace("+0000", "+00:00"))
        except ValueError:
            return None
    return None


def _number(value: float) -> float:
    return round(float(value), 2)


def _metric_data(
    clients: AwsClients, queries: list[dict[str, Any]], start: datetime, end: datetime
) -> dict[str, list[tuple[datetime, float]]]:
    """GetMetricData, every query in one request (followed through NextToken): id -> [(time, value)] oldest first.
    A point whose time cannot be read is left out (it could be neither placed in the window nor sorted)."""
    out: dict[str, list[tuple[datetime, float]]] = {q["Id"]: [] for q in queries}
    kwargs: dict[str, Any] = {
        "MetricDataQueries": queries,
        "StartTime": start,
        "EndTime": end,
        "ScanBy": "TimestampAscending",
    }
    for _ in range(10):  # each page is at most 100,800 points: a handful of pages covers any window here
        page = clients.get("cloudwatch").get_metric_data(**kwargs)
        for result in page.get("MetricDataResults", []):
            points = zip(result.get("Timestamps", []), result.get("Values", []), strict=False)
            timed = ((_aws_time(t), float(v)) for t, v in points)
            out.setdefault(result["Id"], []).extend((t, v) for t, v in timed if t is not None)
        if not page.get("NextToken"):
            break
        kwargs["NextToken"] = page["NextToken"]
    return {key: sorted(points, key=lambda p: p[0]) for key, points in out.items()}


def _stat_query(query_id: str, namespace: str, name: str, dimensions: dict[str, str], stat: str, period: int) -> dict:
    return {
        "Id": query_id,
        "MetricStat": {
            "Metric": {
                "Namespace": namespace,
                "MetricName": name,
                "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions.items()],
            },
            "Period": period,
            "Stat": stat,
        },
        "ReturnData": True,
    }
