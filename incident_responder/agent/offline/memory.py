"""DIAGNOSING (the offline model): the function's past incidents as a hypothesis, checked first.

The investigator's ``get_incident_history`` is read before its first turn (the agent's pre-read, agent/nodes.py): no
turn of its own, and an incident with no past costs what it costs without memory, one small answer more. When the last
incident whose fix was verified had faults, the first turn reads only the drift, the evidence that would show them
again; when the drift shows exactly those faults and nothing else, it concludes from the drift (the history itself is
never evidence). Otherwise it investigates as it does without memory, the drift already read (one turn more than
without memory: the price of a hypothesis that did not hold).
"""

from __future__ import annotations

from typing import Any

from incident_responder.agent.offline.observations import Observations

HISTORY_TOOL = "get_incident_history"


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
    if HISTORY_TOOL not in obs.called or "get_config_drift" not in obs.called:
        return None
    past = last_verified(obs)
    if past is None:
        return None
    shown = drift_faults(obs)
    return past if shown and shown == set(past["fault_types"]) else None


def history_first(obs: Observations, available: set[str]) -> list[str] | None:
    """What the history calls for: the drift alone first when a verified fix is on record, nothing more once the
    drift shows that fault again (``[]``: conclude), None to go on as without memory."""
    if HISTORY_TOOL not in obs.called or last_verified(obs) is None:
        return None
    if "get_config_drift" not in obs.called:
        return ["get_config_drift"] if "get_config_drift" in available else None
    return [] if seen_again(obs) else None


def with_first_tools(plan: list[str], available: set[str]) -> list[str]:
    """The first turn's tools and the history with them, when it was not read before the first turn (the plan drops it
    once it was called)."""
    return [*plan, HISTORY_TOOL] if HISTORY_TOOL in available else plan
