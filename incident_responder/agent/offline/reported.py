"""DIAGNOSING (the offline model): what AWS reports of the function to others than its logs.

An event source mapping's own state (its LastProcessingResult, its StateTransitionReason) and an invoke error only
the caller saw, named by the alert (a file system, SnapStart, a rate quota): each read in the failure catalogue's
words, and a fault only where the configuration or the metrics bear it out.
"""

from __future__ import annotations

from typing import Any

from incident_responder.agent.offline.findings import _Builder
from incident_responder.catalogue.queries import MODES_BY_ID, failure_mode_of


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
    if mode.id == "invalid-runtime-or-package":
        _package_refused(b, mode, error_type)
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


def _from_refused_upload(b: _Builder) -> None:
    """A deploy half done: its configuration change went through (the setting's fault, from drift) and the recent
    changes show Lambda refusing its code upload (UpdateFunctionCode with the entry's errorCode): that entry."""
    mode = MODES_BY_ID["code-upload-rejected"]
    if mode.fault_type not in b.faults:
        return
    codes = {s.text for s in mode.signatures}
    for i, event in enumerate((b.obs.results.get("get_recent_changes") or {}).get("events") or []):
        if event.get("event_name") == "UpdateFunctionCode" and event.get("error_code") in codes:
            why = "Lambda refused the new code's upload: the function kept its old code"
            b.faults[mode.fault_type].append(
                b.point("get_recent_changes", f"events[{i}].error_code", event["error_code"], why)
            )
            b.modes[mode.fault_type] = mode.id
            b.causes.append(
                f"the deploy's code upload was refused ({event['error_code']}) after its configuration changed"
            )
            return


def _package_refused(b: _Builder, mode: Any, error_type: str) -> None:
    """The caller reports Lambda refusing the function's runtime (InvalidRuntimeException) or package
    (InvalidZipFileException): the fault when the configuration shows the runtime, or the recent changes a code
    deployment that went through; a person fixes it."""
    if error_type.rsplit(".", 1)[-1] == "InvalidRuntimeException":
        runtime = b.obs.config().get("Runtime")
        found = ("get_lambda_config", "Runtime", runtime, "the runtime Lambda reports it does not support")
    else:
        events = (b.obs.results.get("get_recent_changes") or {}).get("events") or []
        i, event = next(
            (
                (i, e)
                for i, e in enumerate(events)
                if e.get("event_name") == "UpdateFunctionCode" and not e.get("error_code")
            ),
            (None, {}),
        )
        found = ("get_recent_changes", f"events[{i}].event_name", event.get("event_name"), "the code deployed since")
    if not found[2]:
        b.gap(f"the alert names {error_type} ({mode.id}) but the function's configuration does not bear it out")
        return
    b.fault(
        mode.fault_type,
        f"{mode.title[0].lower()}{mode.title[1:]} ({error_type}, as the caller reports)",
        b.point(*found),
        mode=mode.id,
    )


def _failing_mapping(b: _Builder) -> tuple[int, dict[str, Any]] | None:
    """The event source mapping whose last poll reports the function failing its batches (index, mapping)."""
    for i, mapping in enumerate(b.obs.config().get("EventSourceMappings") or []):
        if str(mapping.get("LastProcessingResult") or "").startswith("PROBLEM: Function call failed"):
            return i, mapping
    return None
