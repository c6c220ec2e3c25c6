"""INVESTIGATING: get_dependencies, the state of what a function depends on (queues, secrets, keys, tables...)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pydantic import Field

from incident_responder.account.compact import Compact
from incident_responder.account.errors import AWS_ERRORS, describe_error
from incident_responder.account.names import function_name_of
from incident_responder.account.queue_dependencies import (
    MappingDependency,
    QueueDependency,
    _mappings,
    _other_queues,
    _Reader,
)
from incident_responder.account.readings import _metric_data, _number, _stat_query
from incident_responder.account.resource_dependencies import (
    MAX_TABLES,
    KeyDependency,
    ParameterDependency,
    SecretDependency,
    TableDependency,
    _keys,
    _parameters,
    _secrets,
    _tables,
)
from incident_responder.core.aws import AwsClients

# == get_dependencies ==============================================================================================
QUEUE_AGE_WINDOW = timedelta(minutes=15)
TABLE_THROTTLE_WINDOW = timedelta(minutes=60)


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


def read_dependencies(clients: AwsClients, lambda_name: str) -> Dependencies:
    """What the function depends on and its state now: event source mappings and their queues (with the visibility
    timeout against six times the function's timeout), other queues, secrets, parameters, keys and tables."""
    name = function_name_of(lambda_name)
    result = Dependencies(function_name=name)
    try:
        config = clients.get("lambda").get_function_configuration(FunctionName=name)
    except AWS_ERRORS as exc:
        result.error = describe_error(exc)
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
    for i, table_name in enumerate(tables):
        dimensions = {"TableName": table_name}
        queries.append(_stat_query(f"r{i}", "AWS/DynamoDB", "ReadThrottleEvents", dimensions, "Sum", window))
        queries.append(_stat_query(f"w{i}", "AWS/DynamoDB", "WriteThrottleEvents", dimensions, "Sum", window))
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
