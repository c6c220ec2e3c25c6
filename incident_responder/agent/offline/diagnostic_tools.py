"""DIAGNOSING (the offline model): which diagnostic tools a careful SRE calls next.

The symptom picks the first tools, what the logs report (read by structure: error type, origin, category)
picks the next, and drift against the baseline is checked before concluding (:mod:`.diagnosis` concludes).
"""

from __future__ import annotations

import json

from incident_responder.agent.offline.findings import DISABLED_MAPPING_STATES
from incident_responder.agent.offline.memory import history_first, with_first_tools
from incident_responder.agent.offline.network_drift import _vpc_config_moved
from incident_responder.agent.offline.observations import Observations
from incident_responder.agent.offline.reported import INVOKE_DENIED, missing_variable_errors


# -- investigation ---------------------------------------------------------------------------------
def next_diagnostic_tool(obs: Observations, available: set[str]) -> str | None:
    """The next tool a careful SRE would call, or None when it is time to conclude."""
    return next(iter(next_diagnostic_tools(obs, available)), None)


def next_diagnostic_tools(obs: Observations, available: set[str]) -> list[str]:
    """The tools a careful SRE would call next, together in one turn: every one that what is known so far
    already calls for (none waits on another's result); empty when it is time to conclude."""
    remembered = history_first(obs, available)  # the past incidents: a hypothesis the first tools check
    if remembered is not None:
        return remembered
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
        # An error only the caller saw: what the function's configuration says of it (its file systems, SnapStart,
        # who its resource-based policy lets invoke it, its runtime).
        if (
            obs.alert_error_category() == "kms"
            or obs.alert_mode_area() == "mounts"
            or obs.alert_mode() in (INVOKE_DENIED, "invalid-runtime-or-package")
        ):
            plan.append("get_lambda_config")
        plan = _after_the_logs(obs, fallback) + plan
    plan.append("get_config_drift")
    # The drift read with the first tools (metrics, logs, the history): what it leads to waits for them.
    drift_read = "get_config_drift" in obs.called and (
        "get_function_metrics" in obs.called or "get_function_metrics" not in available
    )
    if drift_read and obs.drift() is None:
        plan += fallback
    # What an SRE reads first: when it started, all invocations or some, against which limits.
    plan.insert(0, "get_function_metrics")
    plan = with_first_tools(plan, available)
    if drift_read:
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
    "async_retry_attempts",
    "async_max_event_age",
    "async_on_failure",
    "dead_letter_target",
)


# Drift paths that explain why the function logged nothing: no invocation ran (throttled, the key, the VpcConfig, an
# event source), or the role may no longer write logs.
SILENCING_PATHS = ("reserved_concurrency", "kms_keys", "network.missing", "event_source_mappings", "aliases")


def _explains_silence(obs: Observations) -> bool:
    series = (obs.results.get("get_function_metrics") or {}).get("series") or {}
    if obs.incident.get("metric_name") not in (None, "Errors") or (series.get("Throttles") or {}).get("total"):
        return True  # throttled, a loop stopped, a queue not drained: not invocations Lambda refused
    for d in obs.drift() or []:
        path = str(d.get("path", ""))
        if path.startswith(SILENCING_PATHS) or (path.startswith("role.") and "logs:" in json.dumps(d.get("baseline"))):
            return True
    return False


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
    # The function's VpcConfig moved to other subnets or groups: where they lead (routes, free addresses).
    if any(
        str(d.get("path", "")).startswith("network.")
        and _vpc_config_moved(str(d["path"]).split("."), d.get("baseline"), d.get("current"))
        for d in obs.drift() or []
    ):
        tools.append("get_network_config")
    # Nothing logged and nothing explains why: Lambda may have refused the invocations while setting up the
    # function's network (its subnets' free addresses, its VPC's interfaces).
    if obs.logs_read() and not obs.logs() and obs.drift() is not None and not _explains_silence(obs):
        tools.append("get_network_config")
    if looping or not explained or obs.is_queue_alarm():
        tools.append("get_dependencies")
    # The code fails on a variable the function does not have and no drift of its environment says why, or a
    # handler changed (a deploy's configuration step): what else did the latest deploy do, or fail to do?
    handler_changed = any(d.get("path") == "handler" for d in obs.drift() or [])
    if ((not explained or missing_variable_errors(obs)) and not looping) or handler_changed:
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
        if not obs.logs() and obs.drift() == []:
            plan.append("get_lambda_config")  # nothing ran and nothing changed: what should invoke it?
        if obs.errors("exception", origin="application") and _some_invocations_succeed(obs):
            # The code fails on some inputs only: what delivers them (a mapping whose batches keep failing)?
            plan.append("get_lambda_config")
    elif "get_recent_logs" in obs.called:
        fallback += ["get_iam_state", "get_lambda_config"]
    return plan


def _some_invocations_succeed(obs: Observations) -> bool:
    """The logs' invocations (REPORT lines) outnumber the failures they report: the code fails on some inputs."""
    logs = obs.results.get("get_recent_logs") or {}
    reports = int((logs.get("invocations") or {}).get("reports") or 0)
    failed = sum(int(e.count or 0) for e in obs.log_errors() if not e.handled)
    return 0 < failed < reports


def _drift_shows(obs: Observations, parts: tuple[str, ...]) -> bool:
    """Whether the drift (when known) has a difference in one of these parts of the configuration."""
    return any(
        d.get("path") == part or str(d.get("path", "")).startswith(f"{part}.")
        for d in obs.drift() or []
        for part in parts
    )
