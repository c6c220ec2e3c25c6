"""What the account says around a failing function, beyond its own configuration: its metrics (and the account's
concurrency), what changed recently (CloudTrail, the function's versions and aliases), and the state of what it
depends on (queues, secrets, parameters, keys, tables).

Read-only, like every diagnostics tool (:mod:`incident_responder.investigation.diagnostics` registers these three): a result
sets ``error`` when the function itself cannot be read, and lists in ``gaps`` the parts that could not be read
(the rest stands). Answers stay small whatever the volume behind them: series have at most
:data:`MAX_POINTS` points, lists are capped and say how many they left out. The function's environment is read
only to find the resources it names: a value is shown only as the resource identifier it was recognised as
(an SQS queue, a Secrets Manager secret, an SSM parameter, a DynamoDB table), never otherwise.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import Field

from incident_responder.account.log_records import Compact
from incident_responder.account.state import (
    SECRET_ARN_IN_TEXT,
    function_name_of,
    read_kms_keys,
    read_queue_url,
    read_reserved_concurrency,
    read_role,
    read_secrets,
    role_policy_documents,
)
from incident_responder.core.aws import AwsClients

AWS_ERRORS = (ClientError, BotoCoreError)


def _describe(exc: Exception) -> str:
    from incident_responder.investigation.diagnostics import describe_error  # diagnostics imports this module

    return describe_error(exc)


def _code(exc: Exception) -> str:
    return exc.response.get("Error", {}).get("Code", "") if isinstance(exc, ClientError) else ""


def _iso(moment: datetime) -> str:
    """ISO 8601 UTC to the second (``2026-11-23T17:05:00Z``): the points' and events' times."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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


def _metric_data(clients: AwsClients, queries: list[dict[str, Any]], start: datetime, end: datetime) -> dict:
    """GetMetricData, every query in one request (followed through NextToken): id -> [(time, value)] oldest first."""
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
            out.setdefault(result["Id"], []).extend((_aws_time(t), float(v)) for t, v in points)
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
    ("AsyncEventsDropped", "Sum"),
    ("RecursiveInvocationsDropped", "Sum"),
)
# Normally zero: any point above zero departs (after a zero or absent start), as does a jump above twice normal.
ZERO_NORMAL = frozenset(
    {"Errors", "Throttles", "DeadLetterErrors", "AsyncEventsDropped", "RecursiveInvocationsDropped"}
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
    if metric in ZERO_NORMAL:
        return (value > 0 and not normal) or (bool(normal) and value > 2 * normal)
    if metric == "Duration":
        return bool(timeout_ms and value >= 0.9 * timeout_ms) or (bool(normal) and value > 2 * normal)
    if metric == "Invocations":
        return normal is not None and (value > 2 * normal or (complete and value < normal / 2))
    return bool(normal) and value > 2 * normal


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
            normal, departed = usual, _iso(at)
            break
    series = MetricSeries(
        statistic=statistic,
        points=[(_iso(at), _number(v)) for at, v in points],
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
        result.error = _describe(exc)
        return result
    now = datetime.now(UTC)
    start, end, period = _window(minutes, now)
    in_progress = end - timedelta(seconds=period) if end > now else None
    result.window_start, result.window_end, result.period_seconds = _iso(start), _iso(end), period
    result.timeout_seconds, result.reserved_concurrency = config.get("Timeout"), reserved
    timeout_ms = int(config["Timeout"]) * 1000 if config.get("Timeout") else None
    queries = [
        _stat_query(f"m{i}", "AWS/Lambda", metric, {"FunctionName": name}, stat, period)
        for i, (metric, stat) in enumerate(FUNCTION_METRICS)
    ]
    try:
        data = _metric_data(clients, queries, start, end)
    except AWS_ERRORS as exc:
        result.error = _describe(exc)
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
        gaps.append(f"account.concurrency_limit: {_describe(exc)}")
    functions: list[str] = []
    try:
        functions, more = _functions_with_concurrency(clients)
        if more:
            gaps.append(
                f"account: more than {MAX_LIST_METRICS_PAGES} pages of ConcurrentExecutions metrics, not all listed"
            )
    except AWS_ERRORS as exc:
        gaps.append(f"account.top_functions: {_describe(exc)}")
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
        gaps.append(f"account.peak_concurrent_executions: {_describe(exc)}")
    if points := data.get("acct"):
        at, peak = max(points, key=lambda p: p[1])
        account.peak_concurrent_executions, account.peak_at = _number(peak), _iso(at)
    peaks = [(max(v for _, v in data[f"f{i}"]), f) for i, f in enumerate(functions) if data.get(f"f{i}")]
    for peak, function in sorted(peaks, key=lambda p: (-p[0], p[1]))[:TOP_FUNCTIONS]:
        top = TopFunction(function_name=function, peak_concurrent_executions=_number(peak))
        try:
            top.reserved_concurrency = read_reserved_concurrency(clients, function)
        except AWS_ERRORS as exc:
            gaps.append(f"account.top_functions.{function}.reserved_concurrency: {_describe(exc)}")
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


# == get_recent_changes ============================================================================================
MAX_CHANGES = 20
MAX_TRAIL_LOOKUPS = 6  # CloudTrail allows LookupEvents 2 a second per account and region
TRAIL_PAGE = 50
MAX_VERSIONS = 5
MAX_ALIASES = 10
MAX_VERSION_PAGES = 20
_LAMBDA_EVENT_VERSION = re.compile(r"^([A-Za-z]+?)20\d{6}(?:v\d+)?$")


class ChangeEvent(Compact):
    time: str = Field(description="ISO 8601 UTC")
    event_name: str = Field(description="the API call (Lambda's without CloudTrail's API-version suffix)")
    event_source: str | None = Field(default=None, description="e.g. lambda.amazonaws.com, iam.amazonaws.com")
    resource: str = Field(description="the function's resource it changed, as looked up (name, role, key ARN, ...)")
    who: str | None = Field(default=None, description="the caller's ARN (userIdentity.arn), else its user name")
    error_code: str | None = Field(default=None, description="set when the call failed (nothing changed)")


class VersionInfo(Compact):
    version: str
    last_modified: str | None = None
    code_sha256: str | None = None
    description: str | None = None


class AliasInfo(Compact):
    name: str
    function_version: str
    routing: dict[str, float] | None = Field(
        default=None, description="AdditionalVersionWeights: version -> share of traffic (unset: none)"
    )


class FunctionHistory(Compact):
    last_modified: str | None = Field(default=None, description="the function's ($LATEST) LastModified")
    versions: list[VersionInfo] = Field(
        default_factory=list, description=f"published versions, newest first, at most {MAX_VERSIONS}"
    )
    omitted_versions: int = Field(default=0, description="older versions not shown")
    aliases: list[AliasInfo] = Field(default_factory=list)
    omitted_aliases: int = 0


class RecentChanges(Compact):
    ALWAYS = frozenset({"events"})  # no change at all is a finding

    function_name: str
    window_hours: int
    events: list[ChangeEvent] = Field(
        default_factory=list,
        description=f"CloudTrail management writes on the function, its role, its environment's KMS key, its event "
        f"source mappings and their queues, and the secrets its environment names; newest first, at most "
        f"{MAX_CHANGES}",
    )
    omitted: int = Field(default=0, description="events read beyond those shown")
    history: FunctionHistory | None = None
    gaps: list[str] = Field(
        default_factory=list, description="what could not be read or was not looked up (the rest stands)"
    )
    error: str | None = None


def _event_name(name: str, source: str | None) -> str:
    if source == "lambda.amazonaws.com" and (m := _LAMBDA_EVENT_VERSION.match(name)):
        return m.group(1)
    return name


def _caller(event: dict[str, Any]) -> tuple[str | None, str | None]:
    """(who, errorCode) from a LookupEvents event: userIdentity.arn from its CloudTrailEvent, else Username."""
    who, error_code = None, None
    detail = event.get("CloudTrailEvent")
    if isinstance(detail, str) and len(detail) < 200_000:
        try:
            parsed = json.loads(detail)
        except ValueError:
            parsed = {}
        if isinstance(parsed, dict):
            identity = parsed.get("userIdentity") or {}
            who = identity.get("arn") if isinstance(identity, dict) else None
            error_code = parsed.get("errorCode")
    return who or event.get("Username"), error_code


def _change_subjects(clients: AwsClients, name: str, config: dict[str, Any], gaps: list[str]) -> list[str]:
    """What CloudTrail names for the function's resources, in the order they are looked up."""
    subjects = [name, config["Role"].rsplit("/", 1)[-1]]
    mappings: list[dict[str, Any]] = []
    try:
        mappings = clients.get("lambda").list_event_source_mappings(FunctionName=name).get("EventSourceMappings", [])
    except AWS_ERRORS as exc:
        gaps.append(f"event source mappings: {_describe(exc)}")
    subjects += [m["UUID"] for m in mappings]
    if config.get("KMSKeyArn"):
        subjects.append(config["KMSKeyArn"])
    subjects += [m["EventSourceArn"] for m in mappings if ":sqs:" in m.get("EventSourceArn", "")]
    variables = (config.get("Environment") or {}).get("Variables") or {}
    subjects += sorted(v for v in variables.values() if SECRET_ARN_IN_TEXT.match(v or ""))
    return list(dict.fromkeys(subjects))


def read_recent_changes(clients: AwsClients, lambda_name: str, hours: int = 24) -> RecentChanges:
    """Who changed the function and what it depends on in the last ``hours`` (CloudTrail, at most 6 LookupEvents
    calls), and its version and alias history."""
    name = function_name_of(lambda_name)
    result = RecentChanges(function_name=name, window_hours=hours)
    lam = clients.get("lambda")
    try:
        config = lam.get_function_configuration(FunctionName=name)
    except AWS_ERRORS as exc:
        result.error = _describe(exc)
        return result
    subjects = _change_subjects(clients, name, config, result.gaps)
    end = datetime.now(UTC)
    start = end - timedelta(hours=hours)
    found: dict[str, tuple[datetime, ChangeEvent]] = {}
    trail = clients.get("cloudtrail")
    for index, subject in enumerate(subjects):
        if index >= MAX_TRAIL_LOOKUPS:
            result.gaps.append(f"not looked up (at most {MAX_TRAIL_LOOKUPS} CloudTrail lookups): {subject}")
            continue
        try:
            page = trail.lookup_events(
                LookupAttributes=[{"AttributeKey": "ResourceName", "AttributeValue": subject}],
                StartTime=start,
                EndTime=end,
                MaxResults=TRAIL_PAGE,
            )
        except (*AWS_ERRORS, NotImplementedError) as exc:  # moto in-process raises NotImplementedError
            # Not allowed, not implemented or throttled: the others would fare no better.
            result.gaps += [f"CloudTrail: {_describe(exc)}"] + [f"not looked up: {s}" for s in subjects[index:]]
            break
        if page.get("NextToken"):
            result.gaps.append(f"{subject}: more than {TRAIL_PAGE} events in the window, only the newest read")
        for event in page.get("Events", []):
            when = _aws_time(event.get("EventTime"))
            if event.get("ReadOnly") == "true" or when is None or event.get("EventId") in found:
                continue
            who, error_code = _caller(event)
            found[event.get("EventId") or f"{subject}-{len(found)}"] = (
                when,
                ChangeEvent(
                    time=_iso(when),
                    event_name=_event_name(str(event.get("EventName", "")), event.get("EventSource")),
                    event_source=event.get("EventSource"),
                    resource=subject,
                    who=who,
                    error_code=error_code,
                ),
            )
    newest = sorted(found.values(), key=lambda e: e[0], reverse=True)
    result.events = [e for _, e in newest[:MAX_CHANGES]]
    result.omitted = max(0, len(newest) - MAX_CHANGES)
    result.history = _history(clients, name, config, result.gaps)
    return result


def _history(clients: AwsClients, name: str, config: dict[str, Any], gaps: list[str]) -> FunctionHistory:
    lam = clients.get("lambda")
    history = FunctionHistory(last_modified=config.get("LastModified"))
    versions: list[dict[str, Any]] = []
    try:
        kwargs: dict[str, Any] = {"FunctionName": name}
        for _ in range(MAX_VERSION_PAGES):
            page = lam.list_versions_by_function(**kwargs)
            versions += [v for v in page.get("Versions", []) if v.get("Version") != "$LATEST"]
            if not (marker := page.get("NextMarker")):
                break
            kwargs["Marker"] = marker
        else:
            gaps.append(f"versions: more than {MAX_VERSION_PAGES} pages, the rest not read")
    except AWS_ERRORS as exc:
        gaps.append(f"versions: {_describe(exc)}")
    versions.sort(key=lambda v: int(v["Version"]) if str(v.get("Version")).isdigit() else -1, reverse=True)
    history.versions = [
        VersionInfo(
            version=v["Version"],
            last_modified=v.get("LastModified"),
            code_sha256=v.get("CodeSha256"),
            description=(v.get("Description") or None) and v["Description"][:200],
        )
        for v in versions[:MAX_VERSIONS]
    ]
    history.omitted_versions = max(0, len(versions) - MAX_VERSIONS)
    try:
        aliases = []
        for page in lam.get_paginator("list_aliases").paginate(FunctionName=name):
            aliases += page.get("Aliases", [])
    except AWS_ERRORS as exc:
        gaps.append(f"aliases: {_describe(exc)}")
        aliases = []
    aliases.sort(key=lambda a: a["Name"])
    history.aliases = [
        AliasInfo(
            name=a["Name"],
            function_version=a["FunctionVersion"],
            routing=((a.get("RoutingConfig") or {}).get("AdditionalVersionWeights") or None),
        )
        for a in aliases[:MAX_ALIASES]
    ]
    history.omitted_aliases = max(0, len(aliases) - MAX_ALIASES)
    return history


# == get_dependencies ==============================================================================================
MAX_MAPPINGS = 10
MAX_QUEUES = 10
MAX_PARAMETERS = 10
MAX_TABLES = 5
QUEUE_AGE_WINDOW = timedelta(minutes=15)
TABLE_THROTTLE_WINDOW = timedelta(minutes=60)
VISIBILITY_TIMEOUT_FACTOR = 6  # Lambda's guidance for an SQS event source: at least six times the function timeout

QUEUE_ARN_RE = re.compile(r"^arn:aws[a-zA-Z-]*:sqs:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,80}(\.fifo)?$")
# https://sqs.REGION.amazonaws.com/ACCOUNT/NAME (and the older and local endpoints' hosts): the path's shape.
QUEUE_URL_RE = re.compile(r"^https?://[A-Za-z0-9.:-]+/(\d{12})/([A-Za-z0-9_-]{1,80}(?:\.fifo)?)$")
PARAMETER_ARN_RE = re.compile(r"^arn:aws[a-zA-Z-]*:ssm:[a-z0-9-]+:\d{12}:parameter(/[A-Za-z0-9_.\-/]{1,2047})$")
PARAMETER_NAME_RE = re.compile(r"^/[A-Za-z0-9_.\-/]{1,2047}$")
TABLE_ARN_RE = re.compile(r"^arn:aws[a-zA-Z-]*:dynamodb:[a-z0-9-]+:\d{12}:table/([A-Za-z0-9_.-]{3,255})(?:/.*)?$")
TABLE_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")
_MISSING_QUEUE = ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")


class QueueState(Compact):
    visibility_timeout: int | None = Field(default=None, description="VisibilityTimeout in seconds")
    messages_visible: int | None = Field(default=None, description="ApproximateNumberOfMessages")
    messages_in_flight: int | None = Field(default=None, description="ApproximateNumberOfMessagesNotVisible")
    oldest_message_age_seconds: float | None = Field(
        default=None,
        description="AWS/SQS ApproximateAgeOfOldestMessage, latest point of the last 15 minutes (unset: none)",
    )
    dead_letter_queue_arn: str | None = Field(default=None, description="RedrivePolicy.deadLetterTargetArn")
    max_receive_count: int | None = Field(default=None, description="RedrivePolicy.maxReceiveCount")
    exists: bool = Field(default=True, description="false: the queue does not exist (left out: it does)")


class MappingDependency(Compact):
    uuid: str
    event_source_arn: str | None = None
    state: str | None = Field(default=None, description="Enabled, Disabled, Enabling, Disabling, Updating, ...")
    last_processing_result: str | None = None
    batch_size: int | None = None
    maximum_batching_window_seconds: int | None = None
    queue: QueueState | None = Field(default=None, description="SQS sources: the queue read")
    visibility_timeout_below_six_times_function_timeout: bool | None = Field(
        default=None,
        description="SQS sources: true when the queue's visibility timeout is under six times the function's "
        "timeout (Lambda's guidance), so messages reappear while a batch is still being processed",
    )


class QueueDependency(Compact):
    queue_arn: str
    used_as: str = Field(
        description="dead_letter_queue | destination_on_failure | destination_on_success | named_in_environment"
    )
    variable: str | None = Field(default=None, description="named_in_environment: the variable naming it")
    messages_visible: int | None = None
    oldest_message_age_seconds: float | None = None
    is_event_source: bool = Field(default=False, description="one of the function's own mappings reads it")
    exists: bool = Field(default=True, description="false: the queue does not exist (left out: it does)")


class SecretDependency(Compact):
    secret_arn: str
    variable: str
    exists: bool = Field(default=True, description="false: no such secret (left out: it exists)")
    deleted_date: str | None = Field(default=None, description="when Secrets Manager deletes it (scheduled)")
    scheduled_for_deletion: bool = False


class ParameterDependency(Compact):
    name: str
    variable: str
    exists: bool = Field(default=True, description="false: no such parameter (left out: it exists)")


class KeyDependency(Compact):
    key_arn: str
    used_for: str = "environment"
    key_state: str | None = Field(default=None, description="Enabled, Disabled, PendingDeletion, ...")
    role_may_decrypt: bool | None = Field(
        default=None,
        description="whether the key policy (and the role's own policies) let the execution role decrypt with it "
        "(unset: the key policy could not be read)",
    )


class TableDependency(Compact):
    table_name: str
    variable: str | None = Field(
        default=None, description="the environment variable naming it (unset: the role's policy)"
    )
    exists: bool = Field(default=True, description="false: no such table (left out: it exists)")
    status: str | None = Field(default=None, description="TableStatus: ACTIVE, UPDATING, ...")
    billing_mode: str | None = Field(default=None, description="PROVISIONED or PAY_PER_REQUEST")
    read_throttle_events: float | None = Field(
        default=None, description="AWS/DynamoDB ReadThrottleEvents, sum over the last 60 minutes (unset: 0)"
    )
    write_throttle_events: float | None = Field(
        default=None, description="AWS/DynamoDB WriteThrottleEvents, sum over the last 60 minutes (unset: 0)"
    )


class Dependencies(Compact):
    ALWAYS = frozenset({"timeout_seconds"})

    function_name: str
    timeout_seconds: int | None = None
    event_source_mappings: list[MappingDependency] = Field(default_factory=list)
    queues: list[QueueDependency] = Field(
        default_factory=list,
        description="other SQS queues: its dead-letter queue, async destinations, queues its environment names",
    )
    secrets: list[SecretDependency] = Field(
        default_factory=list, description="Secrets Manager secrets its environment names by ARN"
    )
    parameters: list[ParameterDependency] = Field(
        default_factory=list, description="SSM parameters its environment names (by ARN or a name starting with /)"
    )
    kms_keys: list[KeyDependency] = Field(default_factory=list, description="the key encrypting its environment")
    tables: list[TableDependency] = Field(
        default_factory=list,
        description=f"DynamoDB tables its role's policies or its environment name (at most {MAX_TABLES})",
    )
    gaps: list[str] = Field(default_factory=list, description="parts that could not be read (the rest stands)")
    error: str | None = None


def _queue_arn_of_url(url: str, region: str) -> str | None:
    """The ARN of a queue URL (the region from the host where it names one: sqs.REGION.amazonaws.com)."""
    m = QUEUE_URL_RE.match(url)
    if not m:
        return None
    host = url.split("/")[2]
    named = re.match(r"^(?:sqs\.)?([a-z]{2}(?:-gov)?-[a-z]+-\d)\.", host)
    partition = "aws-cn" if host.endswith(".cn") else "aws"
    return f"arn:{partition}:sqs:{named.group(1) if named else region}:{m.group(1)}:{m.group(2)}"


class _Reader:
    """One get_dependencies run: its clients, the function's timeout and the gaps it met."""

    def __init__(self, clients: AwsClients, gaps: list[str]):
        self.clients = clients
        self.gaps = gaps
        self._queues: dict[str, QueueState] = {}

    def attempt(self, what: str, read: Callable[[], Any], default: Any = None) -> Any:
        try:
            return read()
        except AWS_ERRORS as exc:
            self.gaps.append(f"{what}: {_describe(exc)}")
            return default

    def queue(self, arn: str) -> QueueState:
        """A queue's attributes, read once per run."""
        if arn in self._queues:
            return self._queues[arn]
        sqs = self.clients.get("sqs")
        state = QueueState()
        try:
            attributes = sqs.get_queue_attributes(
                QueueUrl=read_queue_url(self.clients, arn),
                AttributeNames=[
                    "VisibilityTimeout",
                    "ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible",
                    "RedrivePolicy",
                ],
            ).get("Attributes", {})
        except AWS_ERRORS as exc:
            if _code(exc) in _MISSING_QUEUE:
                state.exists = False
            else:
                self.gaps.append(f"queue {arn}: {_describe(exc)}")
            self._queues[arn] = state
            return state

        def integer(key: str) -> int | None:
            value = attributes.get(key)
            return int(value) if value is not None and str(value).lstrip("-").isdigit() else None

        state.visibility_timeout = integer("VisibilityTimeout")
        state.messages_visible = integer("ApproximateNumberOfMessages")
        state.messages_in_flight = integer("ApproximateNumberOfMessagesNotVisible")
        try:
            redrive = json.loads(attributes.get("RedrivePolicy") or "{}")
        except ValueError:
            redrive = {}
        if isinstance(redrive, dict):
            state.dead_letter_queue_arn = redrive.get("deadLetterTargetArn")
            count = redrive.get("maxReceiveCount")
            state.max_receive_count = int(count) if str(count).isdigit() else None
        self._queues[arn] = state
        return state


def read_dependencies(clients: AwsClients, lambda_name: str) -> Dependencies:
    """What the function depends on and its state now: event source mappings and their queues (with the visibility
    timeout against six times the function's timeout), other queues, secrets, parameters, keys and tables."""
    name = function_name_of(lambda_name)
    result = Dependencies(function_name=name)
    try:
        config = clients.get("lambda").get_function_configuration(FunctionName=name)
    except AWS_ERRORS as exc:
        result.error = _describe(exc)
        return result
    result.timeout_seconds = config.get("Timeout")
    variables: dict[str, str] = (config.get("Environment") or {}).get("Variables") or {}
    reader = _Reader(clients, result.gaps)
    region = clients.region

    result.event_source_mappings = _mappings(reader, name, result.timeout_seconds)
    sources = {m.event_source_arn for m in result.event_source_mappings if m.event_source_arn}
    result.queues = _other_queues(reader, name, config, variables, sources, region)
    result.secrets = _secrets(reader, variables)
    result.parameters = _parameters(reader, variables)
    result.kms_keys = _keys(reader, config)
    result.tables = _tables(reader, config, variables)
    _metrics(reader, result)
    return result


def _mappings(reader: _Reader, name: str, timeout: int | None) -> list[MappingDependency]:
    lam = reader.clients.get("lambda")
    raw: list[dict[str, Any]] = []

    def listed() -> None:
        kwargs: dict[str, Any] = {"FunctionName": name}
        while len(raw) <= MAX_MAPPINGS:
            page = lam.list_event_source_mappings(**kwargs)
            raw.extend(page.get("EventSourceMappings", []))
            if not (marker := page.get("NextMarker")):
                return
            kwargs["Marker"] = marker

    reader.attempt("event source mappings", listed)
    if len(raw) > MAX_MAPPINGS:
        reader.gaps.append(f"event source mappings: only the first {MAX_MAPPINGS} shown")
    out = []
    for m in sorted(raw, key=lambda m: m["UUID"])[:MAX_MAPPINGS]:
        source = m.get("EventSourceArn")
        mapping = MappingDependency(
            uuid=m["UUID"],
            event_source_arn=source,
            state=m.get("State"),
            last_processing_result=m.get("LastProcessingResult"),
            batch_size=m.get("BatchSize"),
            maximum_batching_window_seconds=m.get("MaximumBatchingWindowInSeconds"),
        )
        if source and QUEUE_ARN_RE.match(source):
            mapping.queue = reader.queue(source)
            visibility = mapping.queue.visibility_timeout
            if visibility is not None and timeout:
                mapping.visibility_timeout_below_six_times_function_timeout = (
                    visibility < VISIBILITY_TIMEOUT_FACTOR * timeout
                )
        out.append(mapping)
    return out


def _other_queues(
    reader: _Reader,
    name: str,
    config: dict[str, Any],
    variables: dict[str, str],
    sources: set[str],
    region: str,
) -> list[QueueDependency]:
    named: list[tuple[str, str, str | None]] = []  # (arn, used_as, variable)
    dlq = (config.get("DeadLetterConfig") or {}).get("TargetArn")
    if dlq and QUEUE_ARN_RE.match(dlq):
        named.append((dlq, "dead_letter_queue", None))

    def destinations() -> dict[str, Any]:
        try:
            return reader.clients.get("lambda").get_function_event_invoke_config(FunctionName=name)
        except ClientError as exc:
            if _code(exc) == "ResourceNotFoundException":  # no asynchronous invocation configuration
                return {}
            raise

    invoke_config = reader.attempt("asynchronous destinations", destinations, {}) or {}
    for outcome, used_as in (("OnFailure", "destination_on_failure"), ("OnSuccess", "destination_on_success")):
        target = ((invoke_config.get("DestinationConfig") or {}).get(outcome) or {}).get("Destination")
        if target and QUEUE_ARN_RE.match(target):
            named.append((target, used_as, None))
    for variable, value in sorted(variables.items()):
        arn = value if QUEUE_ARN_RE.match(value or "") else _queue_arn_of_url(value or "", region)
        if arn:
            named.append((arn, "named_in_environment", variable))
    named = list(dict.fromkeys(named))
    if len(named) > MAX_QUEUES:
        reader.gaps.append(f"queues: only the first {MAX_QUEUES} of {len(named)} shown")
    out = []
    for arn, used_as, variable in named[:MAX_QUEUES]:
        state = reader.queue(arn)
        out.append(
            QueueDependency(
                queue_arn=arn,
                used_as=used_as,
                variable=variable,
                messages_visible=state.messages_visible,
                is_event_source=arn in sources,
                exists=state.exists,
            )
        )
    return out


def _secrets(reader: _Reader, variables: dict[str, str]) -> list[SecretDependency]:
    found = reader.attempt("secrets", lambda: read_secrets(reader.clients, variables), []) or []
    return [
        SecretDependency(
            secret_arn=s.secret_arn,
            variable=s.variable,
            exists=s.exists,
            deleted_date=s.deleted_date,
            scheduled_for_deletion=s.deleted_date is not None,
        )
        for s in found
    ]


def _parameter_names(value: str) -> list[str]:
    """The names an environment value may give a parameter: an ARN's (its suffix, with and without the leading
    slash when it has no other: a top-level name's ARN does not say which) or a name starting with /."""
    if m := PARAMETER_ARN_RE.match(value):
        suffix = m.group(1)
        return [suffix] if "/" in suffix[1:] else [suffix[1:], suffix]
    return [value] if PARAMETER_NAME_RE.match(value) else []


def _parameters(reader: _Reader, variables: dict[str, str]) -> list[ParameterDependency]:
    candidates = [
        (variable, names) for variable, value in sorted(variables.items()) if (names := _parameter_names(value or ""))
    ]
    if len(candidates) > MAX_PARAMETERS:
        reader.gaps.append(f"parameters: only the first {MAX_PARAMETERS} of {len(candidates)} looked up")
    ssm = reader.clients.get("ssm")
    out = []
    for variable, names in candidates[:MAX_PARAMETERS]:
        # DescribeParameters, never GetParameter: the metadata, not the value.
        described = reader.attempt(
            f"parameter {names[-1]}",
            lambda names=names: ssm.describe_parameters(
                ParameterFilters=[{"Key": "Name", "Option": "Equals", "Values": names}]
            ),
        )
        if described is None:
            continue
        found = [p["Name"] for p in described.get("Parameters", [])]
        out.append(ParameterDependency(name=found[0] if found else names[-1], variable=variable, exists=bool(found)))
    return out


def _keys(reader: _Reader, config: dict[str, Any]) -> list[KeyDependency]:
    if not config.get("KMSKeyArn"):
        return []
    role = reader.attempt("role (for role_may_decrypt)", lambda: read_role(reader.clients, config["Role"]))
    keys = reader.attempt("kms key", lambda: read_kms_keys(reader.clients, config, role), []) or []
    return [
        KeyDependency(
            key_arn=k.key_arn, used_for=k.used_for, key_state=k.key_state, role_may_decrypt=k.role_may_decrypt
        )
        for k in keys
    ]


def _policy_table_names(documents: list[dict[str, Any]]) -> list[str]:
    names = []
    for document in documents:
        statements = document.get("Statement", [])
        for statement in statements if isinstance(statements, list) else [statements]:
            if not isinstance(statement, dict) or statement.get("Effect") != "Allow":
                continue
            resources = statement.get("Resource", [])
            for resource in [resources] if isinstance(resources, str) else resources or []:
                if isinstance(resource, str) and "*" not in resource and (m := TABLE_ARN_RE.match(resource)):
                    names.append(m.group(1))
    return names


def _tables(reader: _Reader, config: dict[str, Any], variables: dict[str, str]) -> list[TableDependency]:
    named: dict[str, str | None] = {}  # table name -> the variable naming it (None: the role's policy)
    for variable, value in sorted(variables.items()):
        if m := TABLE_ARN_RE.match(value or ""):
            named.setdefault(m.group(1), variable)
        elif "TABLE" in variable.upper() and TABLE_NAME_RE.match(value or ""):
            named.setdefault(value, variable)
    role = reader.attempt("role (for the tables its policies name)", lambda: read_role(reader.clients, config["Role"]))
    if role is not None:
        for table in _policy_table_names(role_policy_documents(reader.clients, role)):
            named.setdefault(table, None)
    if len(named) > MAX_TABLES:
        reader.gaps.append(f"tables: only the first {MAX_TABLES} of {len(named)} shown")
    ddb = reader.clients.get("dynamodb")
    out = []
    for table, variable in list(named.items())[:MAX_TABLES]:
        entry = TableDependency(table_name=table, variable=variable)
        try:
            described = ddb.describe_table(TableName=table)["Table"]
            entry.status = described.get("TableStatus")
            entry.billing_mode = (described.get("BillingModeSummary") or {}).get("BillingMode") or "PROVISIONED"
        except AWS_ERRORS as exc:
            if _code(exc) == "ResourceNotFoundException":
                entry.exists = False
            else:
                reader.gaps.append(f"table {table}: {_describe(exc)}")
        out.append(entry)
    return out


def _metrics(reader: _Reader, result: Dependencies) -> None:
    """The queues' oldest message ages and the tables' throttles: one GetMetricData request."""
    queues = {m.event_source_arn for m in result.event_source_mappings if m.queue and m.queue.exists}
    queues |= {q.queue_arn for q in result.queues if q.exists}
    queues_sorted = sorted(q for q in queues if q)
    tables = [t.table_name for t in result.tables if t.exists]
    if not queues_sorted and not tables:
        return
    end = datetime.now(UTC)
    start = end - TABLE_THROTTLE_WINDOW
    queries = [
        _stat_query(
            f"q{i}", "AWS/SQS", "ApproximateAgeOfOldestMessage", {"QueueName": arn.rsplit(":", 1)[-1]}, "Maximum", 60
        )
        for i, arn in enumerate(queues_sorted)
    ]
    window = int(TABLE_THROTTLE_WINDOW.total_seconds())
    for i, table in enumerate(tables):
        queries.append(_stat_query(f"r{i}", "AWS/DynamoDB", "ReadThrottleEvents", {"TableName": table}, "Sum", window))
        queries.append(_stat_query(f"w{i}", "AWS/DynamoDB", "WriteThrottleEvents", {"TableName": table}, "Sum", window))
    data = reader.attempt(
        "metrics (queue ages, table throttles)", lambda: _metric_data(reader.clients, queries, start, end), {}
    )
    if not data:
        return
    ages: dict[str, float] = {}
    for i, arn in enumerate(queues_sorted):
        recent = [(t, v) for t, v in data.get(f"q{i}", []) if t and t >= end - QUEUE_AGE_WINDOW]
        if recent:
            ages[arn] = _number(recent[-1][1])
    for m in result.event_source_mappings:
        if m.queue is not None and m.event_source_arn in ages:
            m.queue = m.queue.model_copy(update={"oldest_message_age_seconds": ages[m.event_source_arn]})
    for q in result.queues:
        q.oldest_message_age_seconds = ages.get(q.queue_arn)
    for table in result.tables:
        if table.table_name not in tables:
            continue
        index = tables.index(table.table_name)
        reads = sum(v for _, v in data.get(f"r{index}", []))
        writes = sum(v for _, v in data.get(f"w{index}", []))
        table.read_throttle_events = _number(reads) if reads else None
        table.write_throttle_events = _number(writes) if writes else None
