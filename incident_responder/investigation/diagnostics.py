"""INVESTIGATING: the read-only diagnostics tools, as plain functions returning pydantic results.

The MCP server (``mcp/diagnostics/server.py``) only registers these. A result sets its ``error``
field instead of raising: an AWS error (missing function, access denied to the server's own role,
unreachable endpoint) is itself evidence for the investigating agent, and a stack trace never
leaves the server. Results are serialized without the fields left at their default
(:class:`incident_responder.account.compact.Compact`): a model reads every result again in every turn.
Environment variables of the inspected function are never read into a result: :class:`LambdaConfig`
is built from an allow-list of fields.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import Field

from incident_responder.account.baseline import load_baseline
from incident_responder.account.changes import RecentChanges, read_recent_changes
from incident_responder.account.compact import Compact
from incident_responder.account.dependencies import Dependencies, read_dependencies
from incident_responder.account.drift import Difference, date_differences, diff_configurations
from incident_responder.account.errors import AWS_ERRORS, BaselineNotFoundError, describe_error
from incident_responder.account.log_window import InvocationSummary, LogErrorSummary, fold
from incident_responder.account.metrics import FunctionMetrics, read_function_metrics
from incident_responder.account.names import function_name_of
from incident_responder.account.network import (
    FEW_FREE_ADDRESSES,
    INTERFACES_NEAR_QUOTA,
    VPC_NETWORK_INTERFACE_QUOTA,
    NetworkState,
    network_limits,
    read_network,
)
from incident_responder.account.role import read_role
from incident_responder.account.state import configuration_from
from incident_responder.core.aws import AwsClients
from incident_responder.core.encoding import iso
from incident_responder.investigation.function_config import (  # noqa: F401 - the tool's home is its own module
    EventSourceMappingInfo,
    LambdaConfig,
    LambdaVpcConfig,
    get_lambda_config,
)
from incident_responder.redaction.redactor import default_redactor

MAX_EVENTS = 30
MAX_MESSAGE_CHARS = 500
MAX_STREAMS = 50
# CloudWatch updates a stream's lastEventTimestamp lazily (documented: eventual, up to an hour), so a
# stream is read if it could hold events newer than this much before its reported last event.
STREAM_TIMESTAMP_LAG_MS = 60 * 60 * 1000


# -- get_recent_logs ------------------------------------------------------------------------------
# Said in every tool's description, since a model sees the descriptions, not the output schemas.
OMITTED_NOTE = "Fields at their default (null, empty, false, 0; a line's count 1) are left out."


class LogEvent(Compact):
    """One line of the window, with its repeats folded into it: ``message`` is the first occurrence's real text."""

    timestamp: str = Field(description="ISO 8601 UTC of the first occurrence")
    message: str
    truncated: bool = Field(default=False, description=f"message was cut to {MAX_MESSAGE_CHARS} characters")
    count: int = Field(
        default=1, description="occurrences in the window (the same line with other times, ids or numbers)"
    )
    last_timestamp: str | None = Field(default=None, description="ISO 8601 UTC of the last occurrence, when count > 1")


class RecentLogs(Compact):
    ALWAYS = frozenset({"events", "errors"})  # no line, or no error, is a finding

    log_group: str
    window_minutes: int
    events: list[LogEvent] = Field(
        default_factory=list,
        description=f"the newest {MAX_EVENTS} events, oldest first, as lines: repeats folded into the first "
        "occurrence (count, last_timestamp); the platform's START, END and REPORT lines left out (see invocations)",
    )
    errors: list[LogErrorSummary] = Field(
        default_factory=list,
        description="the errors those events report, read by their structure (runtime, SDK and platform formats) "
        "and grouped; first_event / last_event index events",
    )
    invocations: InvocationSummary | None = Field(
        default=None, description="what the platform's START and REPORT lines say (left out: no such line)"
    )
    error: str | None = None


def get_recent_logs(clients: AwsClients, lambda_name: str, minutes: int = 10) -> RecentLogs:
    """The newest 30 log events of ``/aws/lambda/<name>`` in the last ``minutes``, in time order, folded
    (:func:`incident_responder.account.log_window.fold`): repeats counted into their first occurrence, the platform's
    START / END / REPORT lines summarized in ``invocations``.

    Reads streams newest-first and stops once no remaining stream can hold a newer event, so the
    cost and the response size stay bounded whatever the size of the log group.
    """
    name = function_name_of(lambda_name)
    group = f"/aws/lambda/{name}"
    result = RecentLogs(log_group=group, window_minutes=minutes)
    start_ms = int(time.time() * 1000) - minutes * 60 * 1000
    logs = clients.get("logs")
    collected: list[dict[str, Any]] = []
    try:
        streams_read, token = 0, None
        while streams_read < MAX_STREAMS:
            kwargs: dict[str, Any] = {"logGroupName": group, "orderBy": "LastEventTime", "descending": True}
            if token:
                kwargs["nextToken"] = token
            page = logs.describe_log_streams(**kwargs)
            for stream in page.get("logStreams", []):
                last = stream.get("lastEventTimestamp") or stream.get("creationTime", 0)
                newest = sorted(e["timestamp"] for e in collected)[-MAX_EVENTS:]
                floor = max(start_ms, newest[0]) if len(newest) == MAX_EVENTS else start_ms
                if streams_read >= MAX_STREAMS or last + STREAM_TIMESTAMP_LAG_MS < floor:
                    streams_read = MAX_STREAMS  # streams come newest first: nothing further can qualify
                    break
                streams_read += 1
                events = logs.get_log_events(
                    logGroupName=group,
                    logStreamName=stream["logStreamName"],
                    startTime=start_ms,
                    startFromHead=False,
                    limit=MAX_EVENTS,
                )["events"]
                # The stream's name says which version ran: kept to attribute errors to versions.
                collected += [{**e, "stream": stream["logStreamName"]} for e in events]
            token = page.get("nextToken")
            if not token:
                break
    except AWS_ERRORS as exc:
        result.error = describe_error(exc)
        return result
    newest = sorted(collected, key=lambda e: e["timestamp"])[-MAX_EVENTS:]
    result.events, result.errors, result.invocations = fold_events(newest)
    return result


def fold_events(
    events: list[dict[str, Any]],
) -> tuple[list[LogEvent], list[LogErrorSummary], InvocationSummary | None]:
    """A window of CloudWatch events (``timestamp`` in ms, ``message``, ``stream``: the log stream's name, which
    says the version), oldest first, as get_recent_logs returns it: folded lines, the errors (indexing them)
    and what the platform's lines say (None when there is no such line)."""
    # Whole messages are read (a Node.js error's JSON rarely fits in the cut); only what is shown is cut. Secrets
    # are redacted first: one cut in half would no longer look like a secret (the MCP server redacts the rest).
    redact = default_redactor().text
    events = [{**e, "message": redact(e["message"])} for e in events]
    window = fold([e["message"] for e in events], [e.get("stream") for e in events])
    lines = []
    for folded in window.events:
        first, last = events[folded.first], events[folded.last]
        lines.append(
            LogEvent(
                timestamp=iso(first["timestamp"] / 1000, "milliseconds"),
                message=first["message"][:MAX_MESSAGE_CHARS],
                truncated=len(first["message"]) > MAX_MESSAGE_CHARS,
                count=folded.count,
                last_timestamp=iso(last["timestamp"] / 1000, "milliseconds") if folded.count > 1 else None,
            )
        )
    invocations = window.invocations
    return lines, window.errors, invocations if invocations.reports or invocations.versions else None


# -- get_iam_state --------------------------------------------------------------------------------
class IamState(Compact):
    ALWAYS = frozenset({"attached_policy_arns", "inline_policies"})  # none at all is a finding

    function_name: str
    role_name: str | None = None
    role_arn: str | None = None
    attached_policy_arns: list[str] = Field(default_factory=list)
    inline_policies: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="inline policy name -> full policy document"
    )
    error: str | None = None


def get_iam_state(clients: AwsClients, lambda_name: str) -> IamState:
    """The execution role of the function (read from the function, never assumed) and its policies."""
    name = function_name_of(lambda_name)
    try:
        role_arn = clients.get("lambda").get_function_configuration(FunctionName=name)["Role"]
        role = read_role(clients, role_arn)
    except AWS_ERRORS as exc:
        return IamState(function_name=name, error=describe_error(exc))
    return IamState(function_name=name, **role.model_dump())


# -- get_network_config ---------------------------------------------------------------------------
class NetworkConfig(NetworkState, Compact):
    ALWAYS = frozenset({"in_vpc"})

    function_name: str
    in_vpc: bool = False
    no_route_out: list[str] = Field(
        default_factory=list,
        description="subnets whose route table leads nowhere out of the VPC: no active default route to a NAT or "
        "internet gateway and no gateway VPC endpoint (unset: every subnet has one)",
    )
    few_free_addresses: dict[str, int] = Field(
        default_factory=dict,
        description=f"subnet -> its free IP addresses (AvailableIpAddressCount), for subnets with fewer than "
        f"{FEW_FREE_ADDRESSES} (unset: every subnet has more)",
    )
    dns_support: bool | None = Field(
        default=None, description="false: the VPC's DNS resolution (enableDnsSupport) is off (unset: on)"
    )
    network_interfaces_in_vpc: int | None = Field(
        default=None,
        description=f"network interfaces in the function's VPC, when at least {INTERFACES_NEAR_QUOTA} (Lambda's "
        f"default quota: {VPC_NETWORK_INTERFACE_QUOTA} per VPC); unset: fewer",
    )
    error: str | None = None


def get_network_config(clients: AwsClients, lambda_name: str) -> NetworkConfig:
    """Egress rules of the function's security groups, the NACL entries of its subnets, the subnets that have no
    route out or few free addresses, and the VpcConfig ids that no longer exist."""
    name = function_name_of(lambda_name)
    try:
        raw = clients.get("lambda").get_function_configuration(FunctionName=name)
        network = read_network(clients, raw.get("VpcConfig"))
        limits = network_limits(clients, network)
    except AWS_ERRORS as exc:
        return NetworkConfig(function_name=name, error=describe_error(exc))
    return NetworkConfig(function_name=name, **network.model_dump(), **limits)


# -- get_config_drift -----------------------------------------------------------------------------
class ConfigDrift(Compact):
    ALWAYS = frozenset({"drifted", "differences"})

    function_name: str
    qualifier: str | None = Field(default=None, description="the alias or version compared (unset: $LATEST)")
    version: str | None = Field(default=None, description="the version it runs, whose settings were compared")
    baseline_captured_at: str | None = None
    drifted: bool = False
    differences: list[Difference] = Field(default_factory=list)
    error: str | None = None


def get_config_drift(clients: AwsClients, lambda_name: str, qualifier: str | None = None) -> ConfigDrift:
    """Current configuration against the recorded baseline: one difference per changed path, each with
    when it appeared (``changed_at``) where the account records it. With a ``qualifier``, the settings
    compared are those of the version the alias (or version) runs: what fails behind it."""
    name = function_name_of(lambda_name)
    try:
        baseline = load_baseline(clients, name)
        where = {"Qualifier": qualifier} if qualifier else {}
        raw = clients.get("lambda").get_function_configuration(FunctionName=name, **where)
        current = configuration_from(clients, raw)
    except BaselineNotFoundError as exc:
        return ConfigDrift(function_name=name, qualifier=qualifier, error=str(exc))
    except AWS_ERRORS as exc:
        return ConfigDrift(function_name=name, qualifier=qualifier, error=describe_error(exc))
    # When each difference appeared, where the account can tell; a failed look-up leaves it unset.
    differences = date_differences(
        clients, name, diff_configurations(baseline.configuration, current), baseline.captured_at, current
    )
    return ConfigDrift(
        function_name=name,
        qualifier=qualifier,
        version=raw.get("Version") if qualifier else None,
        baseline_captured_at=baseline.captured_at,
        drifted=bool(differences),
        differences=differences,
    )


# -- get_function_metrics, get_recent_changes, get_dependencies ------------------------------------------------
# Read by incident_responder.account (metrics, changes, dependencies); registered as tools like the ones above.
def get_function_metrics(clients: AwsClients, lambda_name: str, minutes: int = 60) -> FunctionMetrics:
    """The function's AWS/Lambda metrics over the last ``minutes`` (at most 12 points a series), when each departed
    from its normal, and the account's concurrency (limits, peak, the top functions)."""
    return read_function_metrics(clients, lambda_name, minutes)


def get_recent_changes(clients: AwsClients, lambda_name: str, hours: int = 24) -> RecentChanges:
    """CloudTrail's management writes on the function and what it depends on in the last ``hours`` (newest first,
    at most 20, who made each), and the function's versions and aliases."""
    return read_recent_changes(clients, lambda_name, hours)


def get_dependencies(clients: AwsClients, lambda_name: str) -> Dependencies:
    """The state of what the function depends on: event source mappings and their queues, other queues, secrets,
    parameters, the environment's key, tables."""
    return read_dependencies(clients, lambda_name)
