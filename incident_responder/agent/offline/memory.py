"""DIAGNOSING (the offline model): the function's past incidents as a hypothesis, checked first.

With ``get_incident_history`` among its tools, the offline investigator reads it first, together with the drift
(which it always reads and which does not wait on the history). When the last incident whose fix was verified had
faults that this drift shows again, and the drift shows nothing else, that hypothesis is checked and it concludes
from the drift (the evidence); the history itself is never evidence. Otherwise it investigates as it does without
memory, the history's turn spent.
"""

from __future__ import annotations

from typing import Any

from incident_responder.agent.offline.observations import Observations

HISTORY_TOOL = "get_incident_history"
# What the offline investigator reads before the history's hypothesis is known, as it would without memory.
FIRST_TOOLS = ("get_function_metrics", "get_recent_logs", "get_lambda_config", "get_iam_state")


def last_verified(obs: Observations) -> dict[str, Any] | None:
    """The newest past incident whose fix was verified, as get_incident_history answered (None: none, or unread)."""
    history = obs.results.get(HISTORY_TOOL) or {}
    for past in history.get("incidents") or []:
        if isinstance(past, dict) and past.get("verified_at") and past.get("fault_types"):
            return past
    return None


def drift_faults(obs: Observations) -> set[str]:
    """The faults this drift alone shows (the offline model's drift reading, without the logs)."""
    from incident_responder.agent.offline.drift import _from_drift
    from incident_responder.agent.offline.findings import _Builder

    drift = obs.drift()
    if not drift:
        return set()
    builder = _Builder(obs)
    _from_drift(builder, drift)
    return {fault for fault, pointers in builder.faults.items() if pointers}


def seen_again(obs: Observations) -> dict[str, Any] | None:
    """The last verified incident whose faults are exactly what this drift shows again, or None."""
    if HISTORY_TOOL not in obs.called or any(tool in obs.called for tool in FIRST_TOOLS):
        return None
    past = last_verified(obs)
    if past is None:
        return None
    shown = drift_faults(obs)
    return past if shown and shown == set(past["fault_types"]) else None


def history_first(obs: Observations, available: set[str]) -> list[str] | None:
    """The tools of the history's turn (the history and the drift), ``[]`` to conclude on a checked hypothesis,
    None to investigate as without memory."""
    if HISTORY_TOOL not in available:
        return None
    if HISTORY_TOOL not in obs.called:
        return [t for t in (HISTORY_TOOL, "get_config_drift") if t in available and t not in obs.called]
    return [] if seen_again(obs) else None
