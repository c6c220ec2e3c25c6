"""DIAGNOSING (the offline model): the faults configuration drift against the baseline shows.

Configuration outranks log text: with drift known, infrastructure faults come from drift, and the logs add
evidence to them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from incident_responder.account.baseline import event_source_mapping_arn
from incident_responder.agent.offline.findings import (
    DISABLED_MAPPING_STATES,
    UNUSABLE_KEY_STATES,
    _Builder,
    network_mode,
)
from incident_responder.agent.offline.network_drift import _vpc_changed, _vpc_config_moved
from incident_responder.agent.offline.observations import Observations
from incident_responder.catalogue.queries import modes_by_fault_type

# Errors that say the invocation itself ran out of time or memory, or the runtime died: the function's limits.
LIMIT_CATEGORIES = ("timeout", "out_of_memory", "runtime_exit")
# Settings of the function whose change from the baseline is a fault by itself: path -> (fault type, what it is).
# The errors the logs report for that fault's catalogue entries are its evidence (and not the code's own failure).
SETTING_FAULTS = {
    "handler": ("handler_misconfigured", "the handler setting"),
    "runtime": ("runtime_misconfigured", "the function's runtime"),
    "layers": ("layers_changed", "the function's layers"),
    "async_retry_attempts": ("async_config_changed", "the asynchronous invocation's maximum retry attempts"),
    "async_max_event_age": ("async_config_changed", "the asynchronous invocation's maximum event age"),
    "async_on_failure": ("async_config_changed", "the asynchronous invocation's on-failure destination"),
    "dead_letter_target": ("dead_letter_misconfigured", "the dead-letter queue"),
}
# What the function's metrics show of a setting's fault when its logs print nothing of it (Lambda's, not the code's).
SETTING_METRICS = {
    "async_config_changed": ("AsyncEventsDropped", "DestinationDeliveryFailures"),
    "dead_letter_misconfigured": ("DeadLetterErrors",),
}


def _setting_changed(b: _Builder, i: int, diff: dict[str, Any], when: str, dated: list[int], ptr: int) -> None:
    fault, what = SETTING_FAULTS[diff["path"]]
    before, now = diff.get("baseline"), diff.get("current")
    shown = json.dumps(now) if isinstance(now, list) else now  # a list is matched by its JSON
    cfg = b.point("get_config_drift", f"differences[{i}].current", shown, f"{what} is {now} (baseline {before})")
    modes = {m.id for m in modes_by_fault_type().get(fault, [])}
    errors = [e for e in b.obs.log_errors() if e.failure_mode in modes]
    for error in errors:
        b.explained.add((str(error.error_type), str(error.message)))
    points = b.error_points(errors[0], f"the runtime fails on {what}") if errors else []
    mode = str(errors[0].failure_mode) if errors else None
    if mode == "init-phase-timeout":  # the Init phase run again in the invocation used up the function's time
        b.explained.update((str(e.error_type), str(e.message)) for e in b.obs.errors("timeout"))
    if not errors and len(modes) == 1:
        # Lambda prints nothing of it to the function's logs: its one entry, borne out by the configuration and
        # by its metric where it shows.
        (mode,) = modes
        series = (b.obs.results.get("get_function_metrics") or {}).get("series") or {}
        for metric in SETTING_METRICS.get(fault, ()):
            total = (series.get(metric) or {}).get("total")
            if total:
                points.append(b.point("get_function_metrics", f"series.{metric}.total", total, f"{metric} above 0"))
    b.fault(fault, f"{what} changed from {before} to {now}{when}", ptr, cfg, *points, *dated, mode=mode)


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
    # The role lost only what let it write its logs: the logs do not arrive (else the entry of the other permission).
    role = [d for d in drift if d["path"].split(".")[0] == "role"]
    logs_only = bool(role) and all(_logs_lost(d["path"], d.get("baseline"), d.get("current")) for d in role)
    for i, diff in enumerate(drift):
        path, before, now = diff["path"], diff.get("baseline"), diff.get("current")
        parts = path.split(".")
        when, dated = _when(b, i, diff)
        ptr = b.point("get_config_drift", f"differences[{i}].path", path, f"{path} differs from the recorded baseline")
        if parts[0] == "role":
            what = path.split(".", 2)[-1]
            denied = b.first_error_points("the function is denied access by its role", "access_denied")
            # The role lost what Lambda uses to create the function's network interfaces.
            enis = "ec2:CreateNetworkInterface" in json.dumps(
                before
            ) and "ec2:CreateNetworkInterface" not in json.dumps(now)
            b.fault(
                "permission_loss",
                f"the execution role's {what} changed from the baseline ({'removed' if now is None else 'modified'}){when}"
                + ("; it no longer grants ec2:CreateNetworkInterface" if enis else ""),
                ptr,
                *denied,
                *dated,
                mode="vpc-permissions-missing" if enis else ("logs-not-delivered" if logs_only else None),
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
        elif parts[0] == "network" and _vpc_config_moved(parts, before, now):
            _vpc_changed(b, i, diff, when, dated, ptr, drift)
        elif parts[0] == "network":
            blocked = b.first_error_points("outbound connections fail", "network")
            b.fault(
                "network_block",
                f"the function's network egress path changed from the baseline{when}",
                ptr,
                *blocked,
                *dated,
                mode=network_mode(path, before, now),
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
                    mode=b.regression_mode(),
                )
            elif alias in moved:  # the version's code hash: the same change, seen from the code
                b.faults.setdefault("deployment_regression", []).extend([ptr, *dated])
            else:  # the code the alias runs changed though the version did not
                b.fault(
                    "deployment_regression",
                    f"the code behind alias {alias} changed{when}",
                    ptr,
                    *dated,
                    mode=b.regression_mode(),
                )
        elif parts[0] == "aliases" and len(parts) == 2 and before is not None and now is None:
            version = before.get("function_version") if isinstance(before, dict) else None
            b.fault(
                "deployment_regression",
                f"alias {parts[1]} (version {version} in the baseline) was deleted{when}: callers naming it get "
                "ResourceNotFoundException and the function is not invoked",
                ptr,
                *dated,
                mode="function-not-found",
            )
        elif parts[0] == "aliases":
            b.gap(f"alias {parts[1]} differs from the baseline ({path})")
        elif parts[0] == "kms_keys" and parts[-1] == "found":
            key = path[len("kms_keys.") : -len(".found")]
            if before is True and now is False:
                cfg = b.point("get_config_drift", f"differences[{i}].current", now, "KMS has no such key any more")
                b.resources.append(key)
                b.fault(
                    "kms_key_missing",
                    f"the KMS key the function's configuration names no longer exists{when}: Lambda cannot decrypt "
                    "the environment, so no invocation starts",
                    ptr,
                    cfg,
                    *dated,
                    mode="kms-key-not-found",
                )
        elif parts[0] == "kms_keys" and parts[-1] == "key_state" and now is None:
            pass  # a key that is gone has no state: its ``found`` difference says so
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
                    mode="kms-key-pending-deletion" if now == "PendingDeletion" else "kms-key-disabled",
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
        elif parts[0] == "invoke_permissions" and len(parts) == 2:
            if before is not None and now is None:
                principal = before.get("principal") if isinstance(before, dict) else None
                b.fault(
                    "invoke_permission_lost",
                    f"the statement {parts[1]} of the function's resource-based policy, which let {principal} invoke "
                    f"it, was removed{when}: Lambda refuses that caller before the function runs",
                    ptr,
                    *dated,
                    mode="resource-policy-missing",
                )
            else:
                b.gap(f"the function's resource-based policy statement {parts[1]} differs from the baseline")
        elif path in SETTING_FAULTS:
            _setting_changed(b, i, diff, when, dated, ptr)
        else:
            b.gap(f"{path} differs from the baseline ({json.dumps(before)[:60]} -> {json.dumps(now)[:60]})")


# What lets a role write its logs: the actions, or the managed policies that grant them.
_LOGS_GRANTS = re.compile(r"logs:(\*|PutLogEvents)|AWSLambda(Basic|VPCAccess)ExecutionRole", re.IGNORECASE)


def _logs_lost(path: str, before: Any, now: Any) -> bool:
    """Whether this change of the role took away what let it write its logs (CloudWatch Logs)."""
    had = bool(_LOGS_GRANTS.search(path + json.dumps(before))) if before is not None else False
    return had and not (now is not None and _LOGS_GRANTS.search(json.dumps(now)))


def _function_timeout(obs: Observations) -> Any:
    return (obs.results.get("get_function_metrics") or {}).get("timeout_seconds") or (
        obs.results.get("get_dependencies") or {}
    ).get("timeout_seconds")
