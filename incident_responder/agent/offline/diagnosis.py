"""The diagnosis policy: which tool a careful SRE calls next, and what the results add up to.

The symptom picks the first tool, what the logs report (read by structure: error type, origin,
category) picks the next, and drift against the baseline is checked before concluding. Configuration
outranks log text: a log line alone never makes it claim an infrastructure fault that drift
contradicts, and with drift known, infrastructure faults come from drift (the logs add evidence).
"""

from __future__ import annotations

import json
import re
from typing import Any

from incident_responder.account.baseline import event_source_mapping_arn
from incident_responder.account.log_records import ReportRecord, parse_event
from incident_responder.agent.offline.observations import Observations, SeenError
from incident_responder.catalogue import FAILURE_MODES
from incident_responder.core.contracts import ACTION_FOR_FAULT, FAULT_PRIORITY

# Error types AWS documents for failures the responder does not diagnose yet (docs/failure-catalogue.md): seen
# in the logs, they are named as such, never taken for a bug in the code.
NOT_YET = {
    s.text: mode.title
    for mode in FAILURE_MODES
    if mode.responder == "not_yet"
    for s in mode.signatures
    if s.kind != "message"
}
# Key states in which Lambda cannot decrypt the function's environment.
UNUSABLE_KEY_STATES = {"Disabled", "PendingDeletion", "PendingImport", "Unavailable", "PendingReplicaDeletion"}
DISABLED_MAPPING_STATES = {"Disabled", "Disabling"}
# Errors that say the invocation itself ran out of time or memory, or the runtime died: the function's limits.
LIMIT_CATEGORIES = ("timeout", "out_of_memory", "runtime_exit")
_SECONDS = re.compile(r"after (?P<seconds>\d+(?:\.\d+)?) seconds")


# -- investigation ---------------------------------------------------------------------------------
def next_diagnostic_tool(obs: Observations, available: set[str]) -> str | None:
    """The next tool a careful SRE would call, or None when it is time to conclude."""
    return next(iter(next_diagnostic_tools(obs, available)), None)


def next_diagnostic_tools(obs: Observations, available: set[str]) -> list[str]:
    """The tools a careful SRE would call next, together in one turn: every one that what is known so far
    already calls for (none waits on another's result); empty when it is time to conclude."""
    metric = obs.incident.get("metric_name")
    plan: list[str] = []
    fallback: list[str] = []  # what to read when drift cannot be known
    if metric == "Throttles":
        plan = ["get_lambda_config"]
    elif metric == "IncomingLogEvents":
        plan = ["get_iam_state"]
    elif obs.is_queue_alarm():
        # The queue is not drained: first what reads it (the event source mappings); when they are all
        # enabled, the function may be failing on its messages, which its logs tell.
        plan = ["get_lambda_config"]
        mappings = obs.config().get("EventSourceMappings")
        if "get_lambda_config" in obs.called and not any(
            m.get("State") in DISABLED_MAPPING_STATES for m in mappings or []
        ):
            plan += _after_the_logs(obs, fallback)
    else:
        if obs.alert_error_category() == "kms":
            plan.append("get_lambda_config")
        plan = _after_the_logs(obs, fallback) + plan
    plan.append("get_config_drift")
    if "get_config_drift" in obs.called and obs.drift() is None:
        plan += fallback
    # What an SRE reads first: when it started, all invocations or some, against which limits.
    plan.insert(0, "get_function_metrics")
    if "get_config_drift" in obs.called:
        plan += _beyond_drift(obs)
    return [tool for tool in dict.fromkeys(plan) if tool in available and tool not in obs.called]


# Drift paths a fault of the catalogue is read from (an environment variable's change may be a loop's cause).
EXPLAINING_PATHS = (
    "role",
    "reserved_concurrency",
    "network",
    "timeout",
    "memory_size",
    "aliases",
    "kms_keys",
    "event_source_mappings",
    "ephemeral_storage",
    "secrets",
)


def _beyond_drift(obs: Observations) -> list[str]:
    """With the drift read: what the function depends on when a loop is suspected or the drift explains nothing
    (its queues, secrets, keys), and what changed around it (CloudTrail, versions) when nothing explains it."""
    series = (obs.results.get("get_function_metrics") or {}).get("series") or {}
    looping = obs.incident.get("metric_name") == "RecursiveInvocationsDropped" or bool(
        (series.get("RecursiveInvocationsDropped") or {}).get("total")
    )
    explained = any(str(d.get("path", "")).split(".")[0] in EXPLAINING_PATHS for d in obs.drift() or []) or bool(
        obs.errors("exception", origin="application")
    )
    tools = []
    if looping or not explained or obs.is_queue_alarm():
        tools.append("get_dependencies")
    if not explained and not looping:
        tools.append("get_recent_changes")
    return tools


# What part of the configuration each kind of log error points at: the tool that reads it, and the drift
# paths that show the same part (baseline and current value) when it changed.
POINTS_AT = {
    "access_denied": ("get_iam_state", ("role",)),
    "network": ("get_network_config", ("network",)),
    "timeout": ("get_lambda_config", ("timeout",)),
    "out_of_memory": ("get_lambda_config", ("memory_size",)),
    "runtime_exit": ("get_lambda_config", ("memory_size", "timeout")),
    "kms": ("get_lambda_config", ("kms_keys",)),
    "storage": ("get_lambda_config", ("ephemeral_storage",)),
    None: ("get_iam_state", ("role",)),  # errors without a line logged: can the role write logs?
}


def _after_the_logs(obs: Observations, fallback: list[str]) -> list[str]:
    """The logs, then the part of the configuration their errors point at, unless the drift (read in the same
    turn) already shows that part changed: it gives the baseline and the current value, so reading the part
    again would only repeat them (``fallback``: what to read when drift cannot be known)."""
    plan = ["get_recent_logs"]
    if obs.logs_read():
        categories: set[str | None] = {e.category for e in obs.log_errors()} & POINTS_AT.keys()
        if not obs.logs():  # errors without a line logged: the role's logging, or nothing ran at all
            categories.add(None)
            fallback.append("get_lambda_config")
        plan += [POINTS_AT[c][0] for c in sorted(categories, key=str) if not _drift_shows(obs, POINTS_AT[c][1])]
    elif "get_recent_logs" in obs.called:
        fallback += ["get_iam_state", "get_lambda_config"]
    return plan


def _drift_shows(obs: Observations, parts: tuple[str, ...]) -> bool:
    """Whether the drift (when known) has a difference in one of these parts of the configuration."""
    return any(
        d.get("path") == part or str(d.get("path", "")).startswith(f"{part}.")
        for d in obs.drift() or []
        for part in parts
    )


# -- conclusion ------------------------------------------------------------------------------------
class _Builder:
    """Accumulates evidence pointers and findings into a Diagnosis payload."""

    def __init__(self, obs: Observations):
        self.obs = obs
        self.evidence: list[dict[str, Any]] = []
        self.faults: dict[str, list[int]] = {}
        self.causes: list[str] = []
        self.gaps: list[str] = []
        self.resources: list[str] = []
        self.regressed: dict[str, tuple[Any, Any]] = {}  # alias -> (baseline version, current version)
        self.environment: dict[str, tuple[int, Any, Any]] = {}  # variable -> (drift index, baseline, current)
        self.explained: set[tuple[str, str]] = set()  # (error type, message) of errors a drift explains
        self.outside: list[tuple[SeenError, str]] = []  # errors of failures the catalogue lists as not diagnosed yet

    def point(self, tool: str, field: str, value: Any, interpretation: str) -> int:
        for i, existing in enumerate(self.evidence):
            if (existing["tool"], existing["field"], existing["value"]) == (tool, field, str(value)):
                return i
        self.evidence.append(
            {"tool": tool, "field": field, "value": str(value), "interpretation": interpretation, "verified": False}
        )
        return len(self.evidence) - 1

    def fault(self, fault_type: str, cause: str, *pointers: int | None) -> None:
        self.faults.setdefault(fault_type, []).extend(p for p in pointers if p is not None)
        if cause not in self.causes:
            self.causes.append(cause)

    def gap(self, text: str) -> None:
        if text not in self.gaps:
            self.gaps.append(text)

    def error_points(self, error: SeenError, interpretation: str) -> list[int]:
        """Pointers to an error the logs report: its summary entry, and an excerpt of the event it is in."""
        pointers = []
        if error.index is not None:
            pointers.append(
                self.point("get_recent_logs", f"errors[{error.index}].error_type", error.error_type, interpretation)
            )
        events = self.obs.logs()
        first = error.first_event
        if isinstance(first, int) and 0 <= first < len(events):
            message = str(events[first].get("message", ""))
            excerpt = next(
                (c for c in (error.error_type, str(error.message)[:80]) if len(c) >= 3 and c in message), None
            )
            if excerpt:
                pointers.append(self.point("get_recent_logs", f"events[{first}].message", excerpt, interpretation))
        return pointers

    def first_error_points(self, interpretation: str, *categories: str) -> list[int]:
        found = self.obs.errors(*categories)
        return self.error_points(found[0], interpretation) if found else []


def _when(b: _Builder, i: int, diff: dict[str, Any]) -> tuple[str, list[int]]:
    """' (at <time>)' and a pointer to what dates it (the CloudTrail event, or the resource's own modification
    time), when the drift tool says when the difference appeared. The pointer cites the source, not the time:
    the same account replayed later has the same events at other times."""
    changed_at = diff.get("changed_at")
    source = diff.get("changed_at_source")
    if not changed_at or not source:
        return (f" at {changed_at}" if changed_at else ""), []
    ptr = b.point(
        "get_config_drift",
        f"differences[{i}].changed_at_source",
        source,
        f"{diff['path']} changed at {changed_at} ({source})",
    )
    return f" at {changed_at}", [ptr]


def _from_drift(b: _Builder, drift: list[dict[str, Any]]) -> None:
    moved = {d["path"].split(".")[1] for d in drift if re.fullmatch(r"aliases\.[^.]+\.function_version", d["path"])}
    for i, diff in enumerate(drift):
        path, before, now = diff["path"], diff.get("baseline"), diff.get("current")
        parts = path.split(".")
        when, dated = _when(b, i, diff)
        ptr = b.point("get_config_drift", f"differences[{i}].path", path, f"{path} differs from the recorded baseline")
        if parts[0] == "role":
            what = path.split(".", 2)[-1]
            denied = b.first_error_points("the function is denied access by its role", "access_denied")
            b.fault(
                "permission_loss",
                f"the execution role's {what} changed from the baseline ({'removed' if now is None else 'modified'}){when}",
                ptr,
                *denied,
                *dated,
            )
        elif path == "reserved_concurrency":
            cfg = b.point(
                "get_config_drift",
                f"differences[{i}].current",
                now,
                f"reserved concurrency is {now} (baseline {before})",
            )
            if now is not None and (before is None or now < before):
                b.fault(
                    "throttling", f"reserved concurrency was lowered from {before} to {now}{when}", ptr, cfg, *dated
                )
        elif parts[0] == "network":
            blocked = b.first_error_points("outbound connections fail", "network")
            b.fault(
                "network_block",
                f"the function's network egress path changed from the baseline{when}",
                ptr,
                *blocked,
                *dated,
            )
        elif path == "timeout":
            cfg = b.point(
                "get_config_drift", f"differences[{i}].current", now, f"timeout is {now} s (baseline {before} s)"
            )
            if now is not None and before is not None and now < before:
                timed = b.first_error_points("invocations hit the timeout", "timeout")
                b.fault(
                    "timeout",
                    f"the function timeout was lowered from {before} s to {now} s{when}",
                    ptr,
                    cfg,
                    *timed,
                    *dated,
                )
        elif path == "memory_size":
            cfg = b.point(
                "get_config_drift", f"differences[{i}].current", now, f"memory is {now} MB (baseline {before} MB)"
            )
            if now is not None and before is not None and now < before:
                killed = b.first_error_points("the runtime was killed for exceeding its memory", "out_of_memory")
                b.fault(
                    "memory_exhaustion",
                    f"memory was lowered from {before} MB to {now} MB{when}",
                    ptr,
                    cfg,
                    *killed,
                    *dated,
                )
        elif parts[0] == "aliases" and len(parts) == 3 and now is not None:
            alias = parts[1]
            if parts[2] == "function_version":
                cfg = b.point(
                    "get_config_drift",
                    f"differences[{i}].current",
                    now,
                    f"alias {alias} routes to version {now} (baseline {before})",
                )
                b.regressed[alias] = (before, now)
                b.fault(
                    "deployment_regression",
                    f"alias {alias} was moved from version {before} to version {now}{when}",
                    ptr,
                    cfg,
                    *dated,
                )
            elif alias in moved:  # the version's code hash: the same change, seen from the code
                b.faults.setdefault("deployment_regression", []).extend([ptr, *dated])
            else:  # the code the alias runs changed though the version did not
                b.fault("deployment_regression", f"the code behind alias {alias} changed{when}", ptr, *dated)
        elif parts[0] == "aliases":
            b.gap(f"alias {parts[1]} was removed since the baseline: invocations through it fail")
        elif parts[0] == "kms_keys" and parts[-1] == "key_state":
            key = path[len("kms_keys.") : -len(".key_state")]
            cfg = b.point("get_config_drift", f"differences[{i}].current", now, f"the key is {now} (baseline {before})")
            if now in UNUSABLE_KEY_STATES or (before == "Enabled" and now != "Enabled"):
                b.resources.append(key)
                b.fault(
                    "kms_key_disabled",
                    f"the KMS key encrypting the environment went from {before} to {now}{when}: "
                    "Lambda cannot decrypt it, so no invocation starts",
                    ptr,
                    cfg,
                    *dated,
                )
        elif parts[0] == "kms_keys" and parts[-1] == "role_may_decrypt":
            key = path[len("kms_keys.") : -len(".role_may_decrypt")]
            cfg = b.point(
                "get_config_drift",
                f"differences[{i}].current",
                now,
                f"the key policy lets the role decrypt: {now} (baseline {before})",
            )
            if before is True and now is False:
                b.resources.append(key)
                b.fault(
                    "kms_access_denied",
                    f"the execution role may no longer decrypt with the key encrypting its environment{when} while "
                    "the key stays enabled: Lambda cannot decrypt the environment, so no invocation starts",
                    ptr,
                    cfg,
                    *b.first_error_points("KMS denies the function's role", "kms"),
                    *dated,
                )
        elif parts[0] == "kms_keys":
            b.gap(f"the function's KMS key changed since the baseline ({path})")
        elif parts[0] == "environment" and len(parts) == 2:
            b.environment[parts[1]] = (i, before, now)
        elif path == "ephemeral_storage":
            cfg = b.point(
                "get_config_drift", f"differences[{i}].current", now, f"/tmp is {now} MB (baseline {before} MB)"
            )
            if now is not None and before is not None and now < before:
                full = b.first_error_points("writes to /tmp fail: no space left on the device", "storage")
                b.fault(
                    "storage_exhaustion",
                    f"ephemeral storage (/tmp) was lowered from {before} MB to {now} MB{when}",
                    ptr,
                    cfg,
                    *full,
                    *dated,
                )
        elif parts[0] == "secrets" and parts[-1] in ("deleted_date", "exists"):
            secret = path[len("secrets.") :].rsplit(".", 1)[0]
            gone = (parts[-1] == "deleted_date" and now and not before) or (parts[-1] == "exists" and now is False)
            if gone:
                cfg = b.point(
                    "get_config_drift",
                    f"differences[{i}].current",
                    now,
                    "the secret is scheduled for deletion" if parts[-1] == "deleted_date" else "the secret is gone",
                )
                b.resources.append(secret)
                failing = [e for e in b.obs.errors(origin="aws_service") if e.category not in LIMIT_CATEGORIES]
                points = b.error_points(failing[0], "reading the secret fails") if failing else []
                b.fault(
                    "dependency_missing",
                    f"the secret {secret.rsplit(':', 1)[-1]} the function reads was scheduled for deletion{when}",
                    ptr,
                    cfg,
                    *points,
                    *dated,
                )
            else:
                b.gap(f"{path} differs from the baseline")
        elif parts[0] == "event_source_mappings" and parts[-1] == "state":
            uuid = parts[1]
            cfg = b.point(
                "get_config_drift", f"differences[{i}].current", now, f"the mapping is {now} (baseline {before})"
            )
            if now in DISABLED_MAPPING_STATES and before not in DISABLED_MAPPING_STATES:
                if arn := b.obs.config().get("FunctionArn"):
                    b.resources.append(event_source_mapping_arn(arn, uuid))
                b.fault(
                    "event_source_disabled",
                    f"event source mapping {uuid} went from {before} to {now}{when}: its queue is no longer read",
                    ptr,
                    cfg,
                    *dated,
                )
        elif parts[0] == "event_source_mappings" and parts[-1] == "queue_visibility_timeout":
            timeout = next((d.get("current") for d in drift if d["path"] == "timeout"), None)
            timeout = timeout or b.obs.config().get("Timeout") or _function_timeout(b.obs)
            cfg = b.point(
                "get_config_drift",
                f"differences[{i}].current",
                now,
                f"the queue's visibility timeout is {now} s (baseline {before} s)",
            )
            if now is not None and before is not None and now < before:
                below = f", below the function's {timeout} s timeout" if timeout and now < timeout else ""
                b.fault(
                    "event_source_misconfigured",
                    f"the visibility timeout of the queue feeding mapping {parts[1]} was lowered from {before} s to "
                    f"{now} s{below}{when}: messages become visible again while in flight, are received again and "
                    "end in the dead-letter queue",
                    ptr,
                    cfg,
                    *dated,
                )
        else:
            b.gap(f"{path} differs from the baseline ({json.dumps(before)[:60]} -> {json.dumps(now)[:60]})")


def _function_timeout(obs: Observations) -> Any:
    return (obs.results.get("get_function_metrics") or {}).get("timeout_seconds") or (
        obs.results.get("get_dependencies") or {}
    ).get("timeout_seconds")


def _own_queue_variables(obs: Observations) -> dict[str, int]:
    """Environment variables naming a queue that one of the function's own mappings reads, with the index of
    that queue in get_dependencies' ``queues``."""
    queues = (obs.results.get("get_dependencies") or {}).get("queues") or []
    return {
        q["variable"]: i
        for i, q in enumerate(queues)
        if isinstance(q, dict) and q.get("is_event_source") and q.get("variable")
    }


def _from_metrics(b: _Builder) -> None:
    """What the function's and the account's metrics show that configuration drift cannot: a recursive loop
    Lambda stopped, and throttling by other functions' use of the account's concurrency."""
    metrics = b.obs.results.get("get_function_metrics") or {}
    if metrics.get("error"):
        return
    series = metrics.get("series") or {}
    dropped = series.get("RecursiveInvocationsDropped") or {}
    if dropped.get("total"):
        points = [
            b.point(
                "get_function_metrics",
                "series.RecursiveInvocationsDropped.total",
                dropped["total"],
                "Lambda's recursive loop detection stopped invocations of this function",
            )
        ]
        cause = "Lambda's recursive loop detection stopped the function"
        own = _own_queue_variables(b.obs)
        for variable, index in own.items():
            points.append(
                b.point(
                    "get_dependencies",
                    f"queues[{index}].is_event_source",
                    True,
                    f"{variable} names the queue that triggers the function",
                )
            )
            cause += f": its output ({variable}) names the queue that triggers it"
            if variable in b.environment:
                i, _, _ = b.environment.pop(variable)
                points.append(
                    b.point(
                        "get_config_drift",
                        f"differences[{i}].path",
                        f"environment.{variable}",
                        f"{variable} changed since the baseline",
                    )
                )
                cause += " since it was changed"
            break
        b.fault("recursive_loop", cause, *points)
    throttles = series.get("Throttles") or {}
    account = metrics.get("account") or {}
    top = (account.get("top_functions") or [{}])[0]
    limit = account.get("unreserved_concurrency_limit") or account.get("concurrency_limit")
    peak = account.get("peak_concurrent_executions")
    if (
        throttles.get("total")
        and "throttling" not in b.faults
        and limit
        and peak is not None
        and peak >= 0.9 * limit
        and top.get("function_name")
        and top["function_name"] != b.obs.function_name
        and metrics.get("reserved_concurrency") is None
    ):
        b.fault(
            "account_concurrency_exhausted",
            f"the account's concurrency ({peak:g} of {limit:g} unreserved) is taken, mostly by "
            f"{top['function_name']} ({top.get('peak_concurrent_executions', '?')} at once): this function has no "
            "reservation, so it is throttled with its own settings unchanged",
            b.point(
                "get_function_metrics",
                "account.top_functions[0].function_name",
                top["function_name"],
                "the function using most of the account's concurrency",
            ),
            b.point(
                "get_function_metrics",
                "account.peak_concurrent_executions",
                peak,
                f"the account ran {peak:g} executions at once (limit {limit:g})",
            ),
            b.point("get_function_metrics", "series.Throttles.total", throttles["total"], "this function's throttles"),
        )


def _from_environment(b: _Builder) -> None:
    """Environment variables changed since the baseline (and not a loop's cause): the code's failures that name
    one are that change's, not a bug."""
    for variable, (i, before, now) in b.environment.items():
        ptr = b.point(
            "get_config_drift",
            f"differences[{i}].path",
            f"environment.{variable}",
            f"environment variable {variable} {'was removed' if now is None else 'changed'} since the baseline",
        )
        naming = [e for e in b.obs.log_errors() if variable in f"{e.error_type}: {e.message}"]
        points = []
        for error in naming[:1]:
            points = b.error_points(error, f"the code fails because {variable} is not what it expects")
        for error in naming:
            b.explained.add((str(error.error_type), str(error.message)))
        what = "was removed" if now is None else ("was added" if before is None else "changed value")
        b.fault(
            "configuration_drift",
            f"environment variable {variable} {what} since the baseline"
            + (f"; the code fails on it ({naming[0].error_type})" if naming else ""),
            ptr,
            *points,
        )


def _report_point(b: _Builder) -> int | None:
    """Invocations whose memory use reached their memory size (the platform's REPORT lines, which the tool
    summarizes; an older server listed them among the events)."""
    if at_limit := b.obs.invocations().get("at_memory_limit"):
        return b.point(
            "get_recent_logs",
            "invocations.at_memory_limit",
            at_limit,
            f"memory used reached the memory size in {at_limit} invocation(s)",
        )
    for i, event in enumerate(b.obs.logs()):
        record = parse_event(str(event.get("message", "")))
        if (
            isinstance(record, ReportRecord)
            and record.memory_size_mb
            and record.max_memory_used_mb is not None
            and record.max_memory_used_mb >= record.memory_size_mb
        ):
            excerpt = f"Max Memory Used: {record.max_memory_used_mb} MB"
            if excerpt in event["message"]:
                return b.point(
                    "get_recent_logs", f"events[{i}].message", excerpt, "memory used reached the memory size"
                )
    return None


def _from_observation_only(b: _Builder) -> None:
    """No baseline to compare with: conclude only what configuration and logs both support."""
    obs = b.obs
    b.gap(
        "configuration drift unknown (no baseline or drift tool unavailable): findings rest on current state and logs"
    )
    config = obs.config()
    if config.get("ReservedConcurrentExecutions") == 0:
        ptr = b.point(
            "get_lambda_config", "ReservedConcurrentExecutions", 0, "reserved concurrency 0 throttles every invocation"
        )
        b.fault("throttling", "reserved concurrency is 0", ptr)
    if (state := config.get("KMSKeyState")) in UNUSABLE_KEY_STATES:
        ptr = b.point("get_lambda_config", "KMSKeyState", state, "Lambda cannot decrypt the environment with this key")
        b.resources.append(config.get("KMSKeyArn") or "")
        b.fault("kms_key_disabled", f"the KMS key encrypting the environment is {state}", ptr)
    if obs.is_queue_alarm():
        for i, mapping in enumerate(config.get("EventSourceMappings") or []):
            if mapping.get("State") in DISABLED_MAPPING_STATES:
                ptr = b.point(
                    "get_lambda_config",
                    f"EventSourceMappings[{i}].State",
                    mapping["State"],
                    "the mapping that reads the queue is disabled",
                )
                b.fault("event_source_disabled", f"event source mapping {mapping.get('UUID')} is disabled", ptr)
    if denied := b.first_error_points("the function is denied access by its role", "access_denied"):
        b.fault("permission_loss", "the execution role denies an action the function needs", *denied)
    if blocked := b.first_error_points("outbound connections fail", "network"):
        b.fault("network_block", "outbound connections from the function fail", *blocked)
    for error in obs.errors("timeout"):
        m = _SECONDS.search(str(error.message))
        if m and config.get("Timeout") is not None and float(m.group("seconds")) == float(config["Timeout"]):
            cfg = b.point("get_lambda_config", "Timeout", config["Timeout"], "the configured timeout")
            b.fault(
                "timeout",
                f"invocations run longer than the {config['Timeout']} s timeout",
                *b.error_points(error, "invocations hit the configured timeout"),
                cfg,
            )
            break
    killed = obs.errors("out_of_memory")
    if killed and (report := _report_point(b)) is not None:
        b.fault(
            "memory_exhaustion",
            "invocations exhaust the function's memory size",
            report,
            *b.error_points(killed[0], "the runtime was killed"),
        )
    if obs.incident.get("metric_name") == "IncomingLogEvents" and "get_iam_state" in obs.results:
        iam = obs.results["get_iam_state"]
        grants_logs = any("logs:" in json.dumps(doc) for doc in iam.get("inline_policies", {}).values())
        if not grants_logs and not iam.get("attached_policy_arns"):
            ptr = b.point(
                "get_iam_state",
                "role_name",
                iam.get("role_name"),
                "this role has no policy granting CloudWatch Logs actions",
            )
            b.fault("permission_loss", "the execution role cannot write logs", ptr)


def _from_log_errors(b: _Builder, drift: list[dict[str, Any]] | None) -> None:
    """What the errors themselves say: the code's failures (a regression's when the deploy changed) and a
    throttled dependency; and what the logs claim that configuration does not bear out."""
    obs = b.obs
    baseline_versions = {str(before) for before, _ in b.regressed.values() if before is not None}
    for error in obs.errors("exception", origin="application"):
        if error.handled or (str(error.error_type), str(error.message)) in b.explained:
            continue
        if str(error.error_type) in NOT_YET:
            b.outside.append((error, NOT_YET[str(error.error_type)]))
            continue
        excerpt = f"{error.error_type}: {error.message}"[:120]
        version = error.function_version
        if "deployment_regression" in b.faults and (version is None or str(version) not in baseline_versions):
            points = b.error_points(error, f"version {version or 'deployed'} fails: {excerpt}")
            b.fault("deployment_regression", f"the deployed version raises {excerpt}", *points)
        else:
            points = b.error_points(error, "an unhandled error in the function's own code")
            b.fault("application_error", f"the function's code raises {excerpt}", *points)
    throttled = obs.errors("throttled", origin="aws_service")
    if throttled:
        error = throttled[0]
        what = f"{error.error_type}" + (f" on {error.operation}" if error.operation else "")
        points = b.error_points(error, "a downstream AWS service throttles the function's requests")
        if drift is None:
            unexplained = "(configuration drift unknown)"
        elif not drift:
            unexplained = "while nothing in the function's configuration changed since the baseline"
        else:
            unexplained = "which none of the configuration's changes explains"
        b.fault(
            "dependency_throttling", f"a downstream AWS service throttles its requests ({what}) {unexplained}", *points
        )
    if drift is not None:
        if obs.errors("access_denied") and "permission_loss" not in b.faults:
            b.gap(
                "the logs report access denied but the role matches its baseline: a resource policy, an SCP or a "
                "permissions boundary may deny it"
            )
        if obs.errors("kms") and "kms_key_disabled" not in b.faults:
            b.gap("the logs report KMS errors but the function's key matches its baseline")
    if obs.alert_error_category() == "kms" and "kms_key_disabled" not in b.faults:
        b.gap("the alert names a KMS error that the function's configuration does not bear out")


REMEDIATION = {
    "dependency_missing": ("cancel the secret's scheduled deletion (RestoreSecret)", "low"),
    "event_source_misconfigured": ("restore the source queue's visibility timeout from the baseline", "low"),
    "storage_exhaustion": ("restore the function's ephemeral storage (/tmp) from the baseline", "low"),
    "configuration_drift": (
        "no automated action: a person restores the environment variable's value (the baseline keeps names and "
        "digests, never values)",
        "medium",
    ),
    "kms_access_denied": (
        "no automated action: a person restores the key policy statement or grant that lets the role decrypt",
        "medium",
    ),
    "account_concurrency_exhausted": (
        "no automated action: a person reserves concurrency for this function, caps the function using the "
        "account's concurrency, or asks for a higher account limit",
        "medium",
    ),
    "recursive_loop": (
        "no automated action: a person fixes the code or configuration that sends the function's output to its "
        "own trigger",
        "medium",
    ),
    "permission_loss": ("restore the execution role's policies from the baseline", "low"),
    "kms_key_disabled": ("re-enable the customer-managed KMS key that encrypts the environment", "medium"),
    "throttling": ("restore the function's reserved concurrency from the baseline", "low"),
    "event_source_disabled": ("re-enable the function's event source mapping, as in the baseline", "low"),
    "network_block": ("restore the security group egress and NACL entries from the baseline", "medium"),
    "deployment_regression": ("roll the alias back to the baseline version", "medium"),
    "timeout": ("restore the function timeout from the baseline", "low"),
    "memory_exhaustion": ("restore the function memory size from the baseline", "low"),
    "application_error": (
        "fix the function's code (no automated action): a person must change and deploy it",
        "medium",
    ),
    "dependency_throttling": (
        "no automated action: a person checks the downstream resource's capacity, other writers to it, and the "
        "function's retries and backoff",
        "medium",
    ),
}
ORDER = [str(f) for f in FAULT_PRIORITY] + [
    "kms_access_denied",
    "account_concurrency_exhausted",
    "recursive_loop",
    "configuration_drift",
    "application_error",
    "dependency_throttling",
    "unknown",
]
ACTIONABLE = {str(f) for f in ACTION_FOR_FAULT}
# Faults where no invocation succeeds at all.
EVERY_INVOCATION = {
    "throttling",
    "kms_key_disabled",
    "event_source_disabled",
    "kms_access_denied",
    "account_concurrency_exhausted",
}


def _unknown(b: _Builder) -> None:
    """Outside the catalogue: say so, with what is known: when the metrics departed from normal, the errors seen,
    what changed around the function, and what could not be read."""
    obs = b.obs
    reason = obs.incident.get("reason") or obs.incident.get("error_message") or "the alert"
    parts = [f"no configuration change or known failure explains {reason[:160]}"]
    pointers: list[int] = []
    series = (obs.results.get("get_function_metrics") or {}).get("series") or {}
    for name in ("Errors", "Throttles", "Duration", "Invocations"):
        metric = series.get(name) or {}
        departed = metric.get("departed_at")
        figure = "total" if "total" in metric else "peak"
        if departed and metric.get(figure) is not None:
            # The figure, not the time, is cited: it is what a replay of the same incident shows again.
            pointers.append(
                b.point(
                    "get_function_metrics",
                    f"series.{name}.{figure}",
                    metric[figure],
                    f"{name} departed from normal at {departed} ({figure} {metric[figure]})",
                )
            )
            parts.append(f"{name} departed from normal at {departed}")
    for error, title in b.outside[:2]:
        pointers += b.error_points(error, f"AWS documents this failure ({title}); the responder does not diagnose it")
        parts.append(f"the logs report {error.error_type}, which AWS documents as: {title}")
    seen = obs.log_errors()
    if seen and not b.outside:
        pointers += b.error_points(seen[0], "the error the logs report")
        parts.append("the logs report " + ", ".join(dict.fromkeys(str(e.error_type) for e in seen[:3])))
    events = (obs.results.get("get_recent_changes") or {}).get("events") or []
    if events and isinstance(events[0], dict):
        latest = events[0]
        pointers.append(
            b.point(
                "get_recent_changes",
                "events[0].event_name",
                latest.get("event_name"),
                f"the latest change around the function ({latest.get('time')}, by {latest.get('who', 'unknown')})",
            )
        )
        parts.append(f"the latest change was {latest.get('event_name')} at {latest.get('time')}")
    elif "get_recent_changes" in obs.results:
        parts.append("no change was recorded around the function")
    b.fault("unknown", "; ".join(parts), *pointers)
    b.gap("no tool output explained the alert: a person investigates from this timeline")


def build_diagnosis(obs: Observations) -> dict[str, Any]:
    b = _Builder(obs)
    drift = obs.drift()
    if drift is None:
        _from_observation_only(b)
    else:
        _from_drift(b, drift)
    _from_metrics(b)
    _from_environment(b)
    _from_log_errors(b, drift)
    for tool, error in obs.failed.items():
        if not tool.startswith("submit_"):
            b.gap(f"{tool} could not be used: {error[:200]}")
    function = obs.function_name or "the function"
    if not b.faults:
        _unknown(b)
    resources = [
        obs.config().get("FunctionArn") or obs.results.get("get_config_drift", {}).get("function_name") or function
    ]
    if "permission_loss" in b.faults and obs.results.get("get_iam_state", {}).get("role_arn"):
        resources.append(obs.results["get_iam_state"]["role_arn"])
    resources += [r for r in dict.fromkeys(b.resources) if r and r not in resources]
    b.faults = dict(sorted(b.faults.items(), key=lambda item: ORDER.index(item[0])))
    plan = []
    for fault, pointers in b.faults.items():
        if fault in REMEDIATION:
            action, risk = REMEDIATION[fault]
            plan.append(
                {
                    "action": action,
                    "details": f"addresses {fault}",
                    "evidence_basis": sorted(set(pointers)),
                    "risk_level": risk,
                    "requires_approval": True,
                }
            )
    infra = [f for f in b.faults if f in ACTIONABLE or f in EVERY_INVOCATION]
    drift_backed = drift is not None and all(b.faults[f] for f in infra)
    confidence = "low" if "unknown" in b.faults else ("high" if drift_backed else "medium")
    if len(infra) > 1 or set(infra) & EVERY_INVOCATION:
        severity = "critical"
    elif infra or "dependency_throttling" in b.faults:
        severity = "high"
    else:
        severity = "medium"
    return {
        "root_cause": f"{function}: " + "; ".join(b.causes) + ".",
        "fault_types": list(b.faults),
        "affected_resources": resources,
        "severity": severity,
        "confidence": confidence,
        "evidence": b.evidence,
        "remediation_plan": plan,
        "investigation_gaps": b.gaps,
    }
