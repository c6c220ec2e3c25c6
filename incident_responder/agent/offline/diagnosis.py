"""DIAGNOSING (the offline model): what the findings add up to, as the payload of submit_diagnosis.

The symptom picks the first tool, what the logs report (read by structure: error type, origin,
category) picks the next, and drift against the baseline is checked before concluding. Configuration
outranks log text: a log line alone never makes it claim an infrastructure fault that drift
contradicts, and with drift known, infrastructure faults come from drift (the logs add evidence).

Split by job: :mod:`.diagnostic_tools` picks the tools, :mod:`.drift` and :mod:`.symptoms` find the faults
(into a :mod:`.findings` builder), and this module orders them, plans their remediation and rates the
diagnosis's severity and confidence.
"""

from __future__ import annotations

from typing import Any

from incident_responder.actions.registry import RISK_FOR_ACTION
from incident_responder.agent.offline.drift import _from_drift
from incident_responder.agent.offline.findings import _Builder
from incident_responder.agent.offline.memory import seen_again
from incident_responder.agent.offline.observations import Observations
from incident_responder.agent.offline.reported import (
    _from_alert_error,
    _from_function_state,
    _from_mappings,
    _from_refused_upload,
    _from_rejected_update,
    _from_snapstart_restore,
)
from incident_responder.agent.offline.symptoms import (
    _from_environment,
    _from_log_errors,
    _from_metrics,
    _from_network_capacity,
    _from_observation_only,
)
from incident_responder.agent.protocol import TERMINAL_TOOL_PREFIX
from incident_responder.catalogue.queries import modes_by_fault_type
from incident_responder.core.contracts import ACTION_FOR_FAULT, FAULTS, FaultType

# What fixes each fault, said to a person, and the order faults are told in: the faults' records (the contract).
REMEDIATION = {str(r.fault_type): r.advice for r in FAULTS if r.advice}
ORDER = [str(r.fault_type) for r in FAULTS]
ACTIONABLE = {str(f) for f in ACTION_FOR_FAULT}
# Faults where no invocation succeeds at all.
EVERY_INVOCATION = {
    "throttling",
    "kms_key_disabled",
    "event_source_disabled",
    "kms_access_denied",
    "account_concurrency_exhausted",
    "vpc_capacity_exhausted",
    "function_not_ready",
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


def _failure_modes(b: _Builder) -> list[str]:
    """For each fault, the catalogue entry it matched: the one a finding named, else the one an error the logs
    report prints, else the catalogue's first entry for the fault type (none for unknown)."""
    by_fault = modes_by_fault_type()
    seen = [str(e.failure_mode) for e in b.obs.log_errors() if e.failure_mode]
    modes = []
    for fault in b.faults:
        candidates = [m.id for m in by_fault.get(fault, [])]
        named = b.modes.get(fault) or next((m for m in seen if m in candidates), None)
        if named or candidates:
            modes.append(named or candidates[0])
    return modes


def build_diagnosis(obs: Observations) -> dict[str, Any]:
    b = _Builder(obs)
    drift = obs.drift()
    if drift is None:
        _from_observation_only(b)
    else:
        _from_drift(b, drift)
    _from_metrics(b)
    _from_network_capacity(b)
    _from_function_state(b)
    _from_mappings(b)
    _from_alert_error(b)
    _from_rejected_update(b)
    _from_environment(b)
    _from_log_errors(b, drift)
    _from_refused_upload(b)
    for tool, error in obs.failed.items():
        if not tool.startswith(TERMINAL_TOOL_PREFIX):
            b.gap(f"{tool} could not be used: {error[:200]}")
    _from_snapstart_restore(b)
    if (past := seen_again(obs)) is not None:  # concluded on the history's hypothesis, checked by the drift
        b.gap(
            f"concluded from the drift without reading further: it shows again {', '.join(past['fault_types'])}, fixed "
            f"and verified at {past['verified_at']} ({past['incident_id']}, get_incident_history)"
        )
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
            # The guardrails' rating of the action that fixes it; a person's own change: medium.
            action = ACTION_FOR_FAULT.get(FaultType(fault))
            risk = RISK_FOR_ACTION[action] if action else "medium"
            plan.append(
                {
                    "action": REMEDIATION[fault],
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
        "failure_modes": _failure_modes(b),
        "affected_resources": resources,
        "severity": severity,
        "confidence": confidence,
        "evidence": b.evidence,
        "remediation_plan": plan,
        "investigation_gaps": b.gaps,
    }
