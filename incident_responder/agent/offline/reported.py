"""DIAGNOSING (the offline model): what AWS reports of the function to others than its logs.

The function's own State and StateReasonCode, an event source mapping's own state (its LastProcessingResult, its
StateTransitionReason) and an invoke error only the caller saw, named by the alert (a file system, SnapStart, a rate quota): each read in the failure catalogue's
words, and a fault only where the configuration or the metrics bear it out.
"""

from __future__ import annotations

from typing import Any

from incident_responder.agent.offline.findings import _Builder
from incident_responder.catalogue.queries import MODES_BY_ID, failure_mode_of

# A state Lambda reports that is no fault of the account's settings, with its reason code (None: any), and the
# catalogue entry it is; the first that matches names it.
_STATES: tuple[tuple[str, str | None, str], ...] = (
    ("Pending", "Creating", "function-pending"),
    ("Pending", "Restoring", "vpc-connection-not-ready"),
    ("Inactive", "Idle", "vpc-connection-not-ready"),
    ("Inactive", "EC2RequestLimitExceeded", "ec2-throttled-during-setup"),
    ("Failed", "EC2RequestLimitExceeded", "ec2-throttled-during-setup"),
)


def _from_function_state(b: _Builder) -> None:
    """The function's State and StateReasonCode, as Lambda reports them (get_lambda_config shows them only when the
    function is not Active): a state that no setting explains is the entry it matches, a fault a person waits out
    or takes to AWS."""
    config = b.obs.config()
    _from_invoked_versions(b, config)
    state, code = config.get("State"), config.get("StateReasonCode")
    mode_id = next((m for s, c, m in _STATES if s == state and c in (None, code)), None)
    if mode_id is None:
        return
    mode = MODES_BY_ID[mode_id]
    points = [b.point("get_lambda_config", "State", state, f"Lambda reports the function {state}")]
    if code:
        points.append(b.point("get_lambda_config", "StateReasonCode", code, f"the reason Lambda gives: {code}"))
    b.fault(
        str(mode.fault_type), f"{mode.title[0].lower()}{mode.title[1:]} (State {state}, {code})", *points, mode=mode.id
    )


def _from_invoked_versions(b: _Builder, config: dict[str, Any]) -> None:
    """A published version the function's aliases or mappings invoke, restoring from a SnapStart snapshot
    (OptimizationStatus On) and Inactive: Lambda deleted its snapshot, and answers SnapStartNotReadyException until
    the version is Active again."""
    for i, version in enumerate(config.get("InvokedVersions") or []):
        snap_start = str(version.get("SnapStart") or "")
        if version.get("State") != "Inactive" or "OptimizationStatus On" not in snap_start:
            continue
        mode = MODES_BY_ID["snapstart-not-ready"]
        where = f"InvokedVersions[{i}]"
        b.fault(
            str(mode.fault_type),
            f"{mode.title[0].lower()}{mode.title[1:]} (version {version.get('Version')} Inactive, SnapStart on)",
            b.point(
                "get_lambda_config",
                f"{where}.State",
                "Inactive",
                f"Lambda reports version {version.get('Version')} Inactive",
            ),
            b.point("get_lambda_config", f"{where}.SnapStart", snap_start, "it restores from a SnapStart snapshot"),
            mode=mode.id,
        )


def _from_snapstart_restore(b: _Builder) -> None:
    """When nothing else explains the errors: errors the function's logs do not show (not one error line), from
    callers invoking a version that restores from a SnapStart snapshot and is Active. The invocations failed before
    the handler ran, in the Restore phase: the entry whose callers see SnapStartTimeoutException."""
    if b.faults or not b.obs.logs_read() or b.obs.log_errors():
        return
    errors = ((b.obs.results.get("get_function_metrics") or {}).get("series") or {}).get("Errors") or {}
    versions = b.obs.config().get("InvokedVersions") or []
    i, version = next(
        (
            (i, v)
            for i, v in enumerate(versions)
            if v.get("State") in (None, "Active") and "OptimizationStatus On" in str(v.get("SnapStart") or "")
        ),
        (None, None),
    )
    if not errors.get("total") or version is None:
        return
    mode = MODES_BY_ID["snapstart-restore-timeout"]
    b.fault(
        str(mode.fault_type),
        f"{mode.title[0].lower()}{mode.title[1:]}: version {version.get('Version')} restores from a SnapStart "
        "snapshot and its invocations fail with no line in the function's logs (callers see "
        "SnapStartTimeoutException)",
        b.point("get_function_metrics", "series.Errors.total", errors["total"], "invocations failed"),
        b.point(
            "get_lambda_config",
            f"InvokedVersions[{i}].SnapStart",
            version["SnapStart"],
            f"version {version.get('Version')}, which callers invoke, restores from a snapshot",
        ),
        mode=mode.id,
    )


def _from_mappings(b: _Builder) -> None:
    """What Lambda reports of a mapping it cannot read from: a Kafka cluster refusing it (its LastProcessingResult),
    or a consumer it stopped (its StateTransitionReason), in the words the failure catalogue lists."""
    for i, mapping in enumerate(b.obs.config().get("EventSourceMappings") or []):
        for field, mode_id in (
            ("LastProcessingResult", "kafka-authentication-failed"),
            ("StateTransitionReason", "kafka-consumer-stopped"),
        ):
            value = str(mapping.get(field) or "")
            mode = MODES_BY_ID[mode_id]
            if value and any(s.text in value for s in mode.signatures):
                ptr = b.point("get_lambda_config", f"EventSourceMappings[{i}].{field}", value, mode.title)
                b.fault(
                    str(mode.fault_type),
                    f"event source mapping {mapping.get('UUID')}: {mode.title[0].lower()}{mode.title[1:]} ({value})",
                    ptr,
                    mode=mode.id,
                )


# What in the function's configuration bears out an invoke error of a file system or SnapStart entry.
_MOUNT_EVIDENCE = {
    "file_system_unavailable": "FileSystems",
    "snapstart_failure": "SnapStart",
    "function_not_ready": "SnapStart",
}


def _from_alert_error(b: _Builder) -> None:
    """An invoke error the alert names (the caller saw it; the function's logs never do) of a file system or
    SnapStart entry, or a rate quota's throttle: the fault when the configuration (the function mounts a file
    system, uses SnapStart) or the metrics bear it out, else a gap."""
    error_type = str(b.obs.incident.get("error_type") or "")
    mode = MODES_BY_ID.get(failure_mode_of(error_type, b.obs.incident.get("error_message")) or "")
    if mode is None or mode.fault_type is None or mode.responder == "not_yet":
        return
    if mode.id == "invocation-rate-exceeded":
        _rate_limited(b, mode, error_type)
    if mode.area != "mounts":
        return
    config = b.obs.config()
    field = _MOUNT_EVIDENCE.get(mode.fault_type, "")
    value = config.get(field)
    if not value:
        b.gap(f"the alert names {error_type} ({mode.id}) but the function's configuration does not bear it out")
        return
    shown = next(iter(value)) if isinstance(value, dict) else value
    ptr = b.point(
        "get_lambda_config",
        f"{field}.{shown}" if isinstance(value, dict) else field,
        value[shown] if isinstance(value, dict) else value,
        f"the function depends on it: {mode.title}",
    )
    b.fault(
        mode.fault_type,
        f"{mode.title[0].lower()}{mode.title[1:]} ({error_type}, as the caller reports)",
        ptr,
        mode=mode.id,
    )


def _rate_limited(b: _Builder, mode: Any, error_type: str) -> None:
    """The caller reports a rate quota's throttle (its Reason): the fault when the function's Throttles metric
    shows throttling that neither its reserved concurrency nor the account's concurrency explains."""
    throttles = ((b.obs.results.get("get_function_metrics") or {}).get("series") or {}).get("Throttles") or {}
    if {"throttling", "account_concurrency_exhausted"} & set(b.faults):
        return  # the concurrency throttles explain it
    if not throttles.get("total"):
        b.gap(f"the alert names a rate quota ({mode.id}) but the function's Throttles metric does not bear it out")
        return
    ptr = b.point(
        "get_function_metrics", "series.Throttles.total", throttles["total"], "Lambda throttled the function's callers"
    )
    b.fault(
        mode.fault_type,
        f"{mode.title[0].lower()}{mode.title[1:]} ({error_type}, as the caller reports)",
        ptr,
        mode=mode.id,
    )


def _failing_mapping(b: _Builder) -> tuple[int, dict[str, Any]] | None:
    """The event source mapping whose last poll reports the function failing its batches (index, mapping)."""
    for i, mapping in enumerate(b.obs.config().get("EventSourceMappings") or []):
        if str(mapping.get("LastProcessingResult") or "").startswith("PROBLEM: Function call failed"):
            return i, mapping
    return None
