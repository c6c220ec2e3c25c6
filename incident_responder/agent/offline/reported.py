"""DIAGNOSING (the offline model): what AWS reports of the function to others than its logs.

The function's own State and StateReasonCode, the versions its aliases and mappings invoke (SnapStart not ready, a
restore timing out), an event source mapping's own state (its LastProcessingResult, its StateTransitionReason), an
invoke error only the caller saw, named by the alert (a file system, SnapStart, a rate quota, the caller's permission,
a package Lambda refuses), and a deploy's refused step in CloudTrail (an environment update, a code upload): each read
in the failure catalogue's words, and a fault only where the configuration or the metrics bear it out.
"""

from __future__ import annotations

import json
import re
from typing import Any

from incident_responder.agent.offline.findings import _Builder
from incident_responder.agent.offline.observations import Observations
from incident_responder.catalogue.queries import MODES_BY_ID

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
    mode = MODES_BY_ID.get(b.obs.alert_mode() or "")
    if mode is None or mode.fault_type is None or mode.responder == "not_yet":
        return
    if mode.id == "invocation-rate-exceeded":
        _rate_limited(b, mode, error_type)
    if mode.id == INVOKE_DENIED:
        _caller_not_authorized(b, mode, str(b.obs.incident.get("error_message") or ""))
    if mode.id in BEFORE_THE_FUNCTION:
        _before_the_function(b, mode, error_type)
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


INVOKE_DENIED = "invoke-not-authorized"
_DENIED_CALLER = re.compile(r"User: (?P<principal>\S+) is not authorized to perform: lambda:InvokeFunction")


def _principals(caller: str) -> set[str]:
    """What a resource-based policy names to let ``caller`` invoke: its ARN (a role's, for a session of it), its
    account (ARN or id), or anyone."""
    if m := re.match(r"^arn:(?P<partition>[\w-]+):sts::(?P<account>\d{12}):assumed-role/(?P<role>[^/]+)/", caller):
        caller = f"arn:{m['partition']}:iam::{m['account']}:role/{m['role']}"
    account = caller.split(":")[4] if caller.count(":") >= 5 else ""
    return {caller, account, f"arn:aws:iam::{account}:root", "*"} - {""}


def _caller_not_authorized(b: _Builder, mode: Any, message: str) -> None:
    """The caller reports it may not invoke the function: the caller's own permissions when the function's
    resource-based policy has no statement for it (nor lost one since the baseline: drift names that); a gap when a
    statement lets it (a deny elsewhere refuses it)."""
    config = b.obs.config()
    permissions = config.get("InvokePermissions")
    caller = m.group("principal") if (m := _DENIED_CALLER.search(message)) else None
    if caller is None or permissions is None or "invoke_permission_lost" in b.faults:
        if caller is None or permissions is None:
            b.gap(f"the alert names {mode.id} but the function's resource-based policy could not be checked")
        return
    if _principals(caller) & set(permissions.values()):
        b.gap(
            f"the alert says {caller} may not invoke the function, yet its resource-based policy lets it: an explicit "
            "deny (an SCP, a permissions boundary, the caller's own policy) or a condition refuses it"
        )
        return
    shown = json.dumps(permissions, sort_keys=True)
    ptr = b.point("get_lambda_config", "InvokePermissions", shown, f"no statement lets {caller} invoke the function")
    b.fault(
        mode.fault_type,
        f"{caller} may not invoke the function (lambda:InvokeFunction, as the caller reports): no statement of the "
        "function's resource-based policy allows it, so the caller's own IAM permissions must",
        ptr,
        mode=mode.id,
    )


# Entries whose error Lambda answers the caller with before (or instead of) running the function.
BEFORE_THE_FUNCTION = {"invoke-request-rejected", "lambda-service-error"}


def _before_the_function(b: _Builder, mode: Any, error_type: str) -> None:
    """The caller reports an error Lambda answered before the function ran (its request refused, the service's own
    failure): the fault when the function's logs report no error of their own; else a gap (its own failure may be
    what the caller saw)."""
    logs = b.obs.results.get("get_recent_logs") or {}
    if logs.get("error") or not isinstance(logs.get("errors"), list):
        b.gap(f"the alert names {error_type} ({mode.id}) but the function's logs could not be read")
        return
    if logs["errors"] or b.faults:
        b.gap(
            f"the alert names {error_type} ({mode.id}), but the function's own errors or configuration may explain it"
        )
        return
    ptr = b.point("get_recent_logs", "errors", "[]", "the function reports no error: the failure came before it ran")
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
        deployed = [
            (i, e)
            for i, e in enumerate(events)
            if e.get("event_name") == "UpdateFunctionCode" and not e.get("error_code")
        ]
        i, event = deployed[0] if deployed else (None, {"event_name": None})
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


# A KeyError's message naming an environment variable (by convention upper case): ``'FEATURE_FLAGS'``.
_VARIABLE = re.compile(r"""^['"]([A-Z][A-Z0-9_]*)['"]$""")


def missing_variable_errors(obs: Observations) -> list[Any]:
    """The code's KeyErrors naming an environment variable that no drift of the environment explains (it was never
    there): the code expects a variable the function's configuration does not hold."""
    changed = {str(d.get("path", "")).split(".", 1)[-1] for d in obs.drift() or [] if "environment." in d["path"]}
    return [
        e
        for e in obs.errors("exception", origin="application")
        if e.error_type == "KeyError" and (m := _VARIABLE.match(str(e.message))) and m.group(1) not in changed
    ]


def _from_rejected_update(b: _Builder) -> None:
    """A deploy whose environment update Lambda refused (CloudTrail: UpdateFunctionConfiguration with an
    InvalidParameterValueException) while its code went live, and the code fails on the variable it lacks."""
    events = (b.obs.results.get("get_recent_changes") or {}).get("events") or []
    failing = missing_variable_errors(b.obs)
    mode = MODES_BY_ID["environment-update-rejected"]
    for i, event in enumerate(events):
        if not isinstance(event, dict) or event.get("event_name") != "UpdateFunctionConfiguration":
            continue
        if event.get("error_code") != "InvalidParameterValueException" or not failing:
            continue
        # The code changed since (or with) the refused update: the new code runs without what it was to be given.
        code = next((j for j, e in enumerate(events) if e.get("event_name") == "UpdateFunctionCode"), None)
        if code is None or events[code].get("error_code"):
            continue
        points = [
            b.point("get_recent_changes", f"events[{i}].error_code", event["error_code"], mode.title),
            b.point("get_recent_changes", f"events[{code}].event_name", "UpdateFunctionCode", "the code was deployed"),
        ]
        if event.get("error_message"):
            points.append(
                b.point(
                    "get_recent_changes", f"events[{i}].error_message", event["error_message"], "why Lambda refused"
                )
            )
        points += b.error_points(failing[0], "the new code fails on a variable the function does not have")
        for error in failing:
            b.explained.add((str(error.error_type), str(error.message)))
        b.fault(
            str(mode.fault_type),
            f"a deploy's environment update was refused at {event.get('time')} ({event['error_code']}: "
            f"{str(event.get('error_message') or '')[:120]}) while its code went live: the code fails on "
            f"{failing[0].error_type} {failing[0].message}",
            *points,
            mode=mode.id,
        )
        return
