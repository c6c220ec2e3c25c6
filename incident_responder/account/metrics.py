"""INVESTIGATING: get_function_metrics, the function's AWS/Lambda metrics and the account's concurrency."""

from __future__ import annotations

import math
import statistics
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import Field

from incident_responder.account.compact import Compact
from incident_responder.account.errors import AWS_ERRORS, describe_error
from incident_responder.account.names import function_name_of
from incident_responder.account.readings import _metric_data, _number, _stat_query
from incident_responder.account.state import read_reserved_concurrency
from incident_responder.core.aws import AwsClients
from incident_responder.core.encoding import iso

# == get_function_metrics ==========================================================================================
MAX_POINTS = 12
TOP_FUNCTIONS = 3
MAX_ACCOUNT_FUNCTIONS = 500  # functions whose concurrency is compared (GetMetricData takes 500 queries a request)
MAX_LIST_METRICS_PAGES = 20

# (metric, statistic), in the order shown. Sum metrics get a total, Maximum metrics a peak.
FUNCTION_METRICS: tuple[tuple[str, str], ...] = (
    ("Invocations", "Sum"),
    ("Errors", "Sum"),
    ("Throttles", "Sum"),
    ("Duration", "Maximum"),
    ("ConcurrentExecutions", "Maximum"),
    ("IteratorAge", "Maximum"),
    ("DeadLetterErrors", "Sum"),
    ("DestinationDeliveryFailures", "Sum"),
    ("AsyncEventsDropped", "Sum"),
    ("RecursiveInvocationsDropped", "Sum"),
)
# Normally zero: any point above zero departs (after a zero or absent start), as does a jump above twice normal.
ZERO_NORMAL = frozenset(
    {
        "Errors",
        "Throttles",
        "DeadLetterErrors",
        "DestinationDeliveryFailures",
        "AsyncEventsDropped",
        "RecursiveInvocationsDropped",
    }
)


class MetricSeries(Compact):
    """One AWS/Lambda metric of the function over the window."""

    statistic: str = Field(description="Sum or Maximum, per period")
    points: list[tuple[str, float]] = Field(
        default_factory=list,
        description=f"[ISO time of the period's start, value], oldest first, at most {MAX_POINTS}; a period without "
        "data has no point",
    )
    total: float | None = Field(default=None, description="Sum metrics: the sum over the window")
    peak: float | None = Field(default=None, description="Maximum metrics: the highest point")
    normal: float | None = Field(
        default=None, description="the median of the points before the departure (of all, if none); unset: no point"
    )
    departed_at: str | None = Field(
        default=None,
        description="time of the first point that departs from normal (unset: none does): errors, throttles, "
        "dropped or dead-letter events above 0 from a zero or absent start, or above twice normal; Duration at "
        "90% of the timeout or above twice normal; Invocations below half or above twice normal",
    )
    timeout_ms: int | None = Field(default=None, description="Duration only: the function's timeout")
    at_timeout: int | None = Field(
        default=None, description="Duration only: points whose maximum is at 99% of the timeout or more"
    )


class TopFunction(Compact):
    function_name: str
    peak_concurrent_executions: float
    reserved_concurrency: int | None = Field(default=None, description="unset: no reservation")


class AccountConcurrency(Compact):
    """The account's concurrency in the region over the same window: whether the pool functions share ran out."""

    concurrency_limit: int | None = Field(default=None, description="AccountLimit.ConcurrentExecutions")
    unreserved_concurrency_limit: int | None = Field(
        default=None,
        description="AccountLimit.UnreservedConcurrentExecutions: what functions without a reservation share",
    )
    peak_concurrent_executions: float | None = Field(
        default=None, description="AWS/Lambda ConcurrentExecutions of the whole account (Maximum)"
    )
    peak_at: str | None = None
    top_functions: list[TopFunction] = Field(
        default_factory=list,
        description=f"the {TOP_FUNCTIONS} functions with the highest ConcurrentExecutions peak in the window",
    )
    omitted: int = Field(
        default=0, description=f"functions not compared (only the first {MAX_ACCOUNT_FUNCTIONS} listed are)"
    )


class FunctionMetrics(Compact):
    ALWAYS = frozenset({"series"})  # no series at all (no datapoint in the window) is a finding

    function_name: str
    window_start: str | None = None
    window_end: str | None = None
    period_seconds: int | None = None
    timeout_seconds: int | None = None
    reserved_concurrency: int | None = Field(default=None, description="unset: no reservation (unreserved pool)")
    series: dict[str, MetricSeries] = Field(
        default_factory=dict,
        description="AWS/Lambda metric -> its series; a metric without any datapoint in the window is left out",
    )
    account: AccountConcurrency | None = None
    gaps: list[str] = Field(default_factory=list, description="parts that could not be read (the rest stands)")
    error: str | None = None


def _window(minutes: int, now: datetime | None = None) -> tuple[datetime, datetime, int]:
    """(start, end, period): at most MAX_POINTS periods of a whole number of minutes, aligned to the period."""
    period = 60 * max(1, math.ceil(minutes / MAX_POINTS))
    count = math.ceil(minutes * 60 / period)
    now = now or datetime.now(UTC)
    epoch = now.timestamp()
    end = datetime.fromtimestamp(math.ceil(epoch / period) * period, UTC)
    return end - timedelta(seconds=count * period), end, period


def _departs(metric: str, value: float, normal: float | None, timeout_ms: int | None, complete: bool) -> bool:
    """Whether a point departs from ``normal``; a period still in progress (not ``complete``) holds part of its
    traffic, so a drop in it is not one."""
    doubled = value > 2 * normal if normal else False  # more than twice a normal that is not zero
    if metric in ZERO_NORMAL:
        return (value > 0 and not normal) or doubled
    if metric == "Duration":
        return bool(timeout_ms and value >= 0.9 * timeout_ms) or doubled
    if metric == "Invocations":
        return normal is not None and (value > 2 * normal or (complete and value < normal / 2))
    return doubled


def _series(
    metric: str,
    statistic: str,
    points: list[tuple[datetime, float]],
    timeout_ms: int | None,
    in_progress: datetime | None = None,
) -> MetricSeries:
    """A metric's series; ``in_progress``: the start of the period still running (its points are partial)."""
    values = [v for _, v in points]
    normal, departed = (statistics.median(values) if values else None), None
    for index, (at, value) in enumerate(points):
        before = values[:index]
        usual = statistics.median(before) if before else None
        if _departs(metric, value, usual, timeout_ms, in_progress is None or at < in_progress):
            normal, departed = usual, iso(at)
            break
    series = MetricSeries(
        statistic=statistic,
        points=[(iso(at), _number(v)) for at, v in points],
        normal=_number(normal) if normal is not None else None,
        departed_at=departed,
    )
    if statistic == "Sum":
        series.total = _number(sum(values))
    else:
        series.peak = _number(max(values))
    if metric == "Duration" and timeout_ms:
        series.timeout_ms = timeout_ms
        series.at_timeout = sum(v >= 0.99 * timeout_ms for v in values)
    return series


def read_function_metrics(clients: AwsClients, lambda_name: str, minutes: int = 60) -> FunctionMetrics:
    """The function's AWS/Lambda metrics over the last ``minutes`` (at most 12 points each, one GetMetricData
    request), where each departed from its normal, and the account's concurrency over the same window."""
    name = function_name_of(lambda_name)
    result = FunctionMetrics(function_name=name)
    try:
        config = clients.get("lambda").get_function_configuration(FunctionName=name)
        reserved = read_reserved_concurrency(clients, name)
    except AWS_ERRORS as exc:
        result.error = describe_error(exc)
        return result
    now = datetime.now(UTC)
    start, end, period = _window(minutes, now)
    in_progress = end - timedelta(seconds=period) if end > now else None
    result.window_start, result.window_end, result.period_seconds = iso(start), iso(end), period
    result.timeout_seconds, result.reserved_concurrency = config.get("Timeout"), reserved
    timeout_ms = int(config["Timeout"]) * 1000 if config.get("Timeout") else None
    queries = [
        _stat_query(f"m{i}", "AWS/Lambda", metric, {"FunctionName": name}, stat, period)
        for i, (metric, stat) in enumerate(FUNCTION_METRICS)
    ]
    try:
        data = _metric_data(clients, queries, start, end)
    except AWS_ERRORS as exc:
        result.error = describe_error(exc)
        return result
    for i, (metric, stat) in enumerate(FUNCTION_METRICS):
        # CloudWatch answers at most one point a period; anything more (or older) is not this window's.
        points = [p for p in data.get(f"m{i}", []) if p[0] and start <= p[0] < end][-MAX_POINTS:]
        if points:
            result.series[metric] = _series(metric, stat, points, timeout_ms, in_progress)
    result.account = _account_concurrency(clients, start, end, period, result.gaps)
    return result


def _account_concurrency(
    clients: AwsClients, start: datetime, end: datetime, period: int, gaps: list[str]
) -> AccountConcurrency:
    account = AccountConcurrency()
    try:
        limit = clients.get("lambda").get_account_settings().get("AccountLimit", {})
        account.concurrency_limit = limit.get("ConcurrentExecutions")
        account.unreserved_concurrency_limit = limit.get("UnreservedConcurrentExecutions")
    except AWS_ERRORS as exc:
        gaps.append(f"account.concurrency_limit: {describe_error(exc)}")
    functions: list[str] = []
    try:
        functions, more = _functions_with_concurrency(clients)
        if more:
            gaps.append(
                f"account: more than {MAX_LIST_METRICS_PAGES} pages of ConcurrentExecutions metrics, not all listed"
            )
    except AWS_ERRORS as exc:
        gaps.append(f"account.top_functions: {describe_error(exc)}")
    account.omitted = max(0, len(functions) - MAX_ACCOUNT_FUNCTIONS)
    functions = functions[:MAX_ACCOUNT_FUNCTIONS]
    window = int((end - start).total_seconds())
    queries = [_stat_query("acct", "AWS/Lambda", "ConcurrentExecutions", {}, "Maximum", period)] + [
        _stat_query(f"f{i}", "AWS/Lambda", "ConcurrentExecutions", {"FunctionName": f}, "Maximum", window)
        for i, f in enumerate(functions)
    ]
    data: dict[str, list[tuple[datetime, float]]] = {}
    try:
        for first in range(0, len(queries), 500):
            data.update(_metric_data(clients, queries[first : first + 500], start, end))
    except AWS_ERRORS as exc:
        gaps.append(f"account.peak_concurrent_executions: {describe_error(exc)}")
    if points := data.get("acct"):
        at, peak = max(points, key=lambda p: p[1])
        account.peak_concurrent_executions, account.peak_at = _number(peak), iso(at)
    peaks = [(max(v for _, v in data[f"f{i}"]), f) for i, f in enumerate(functions) if data.get(f"f{i}")]
    for peak, function in sorted(peaks, key=lambda p: (-p[0], p[1]))[:TOP_FUNCTIONS]:
        top = TopFunction(function_name=function, peak_concurrent_executions=_number(peak))
        try:
            top.reserved_concurrency = read_reserved_concurrency(clients, function)
        except AWS_ERRORS as exc:
            gaps.append(f"account.top_functions.{function}.reserved_concurrency: {describe_error(exc)}")
        account.top_functions.append(top)
    return account


def _functions_with_concurrency(clients: AwsClients) -> tuple[list[str], bool]:
    """Functions with an AWS/Lambda ConcurrentExecutions series by FunctionName alone (ListMetrics), and whether
    the listing was cut short."""
    names: dict[str, None] = {}
    kwargs: dict[str, Any] = {
        "Namespace": "AWS/Lambda",
        "MetricName": "ConcurrentExecutions",
        "Dimensions": [{"Name": "FunctionName"}],
    }
    for _ in range(MAX_LIST_METRICS_PAGES):
        page = clients.get("cloudwatch").list_metrics(**kwargs)
        for metric in page.get("Metrics", []):
            dims = metric.get("Dimensions", [])
            if len(dims) == 1 and dims[0].get("Name") == "FunctionName":
                names.setdefault(dims[0]["Value"], None)
        if not page.get("NextToken"):
            return list(names), False
        kwargs["NextToken"] = page["NextToken"]
    return list(names), True
