"""DIAGNOSING (the offline model): the findings a diagnosis accumulates, and the states that mean a fault.

:class:`_Builder` collects the evidence pointers, the faults with their causes, the gaps and the resources
that :mod:`.drift` and :mod:`.symptoms` find and :mod:`.diagnosis` turns into a Diagnosis payload.
"""

from __future__ import annotations

from typing import Any

from incident_responder.agent.offline.observations import Observations, SeenError
from incident_responder.catalogue.queries import modes_by_fault_type

# Key states in which Lambda cannot decrypt the function's environment.
UNUSABLE_KEY_STATES = {"Disabled", "PendingDeletion", "PendingImport", "Unavailable", "PendingReplicaDeletion"}
DISABLED_MAPPING_STATES = {"Disabled", "Disabling"}
# The ports Lambda's Hyperplane network interfaces use to connect it to the VPC: replies to the function come back
# on them, through the subnet's network ACL (stateless).
EPHEMERAL_PORTS = (1024, 65535)


def network_mode(path: str, before: Any, now: Any) -> str:
    """The catalogue entry of a change to the function's network path (a difference under ``network.``)."""
    if "acl" in path or denies_ephemeral_ports(before, now):
        return "network-acl-ephemeral-ports"
    return "egress-rules-changed"


def denies_ephemeral_ports(before: Any, now: Any) -> bool:
    """Whether a subnet's network ACL entries gained an inbound deny over part of the ephemeral ports (TCP, UDP or
    every protocol): replies to the function's connections are dropped."""
    if not isinstance(now, list):
        return False
    kept = [e for e in before if isinstance(e, dict)] if isinstance(before, list) else []
    for entry in now:
        if not isinstance(entry, dict) or entry in kept or entry.get("Egress") or entry.get("RuleAction") != "deny":
            continue
        if str(entry.get("Protocol")) not in ("-1", "6", "17"):
            continue
        ports = entry.get("PortRange") or {}
        low, high = int(ports.get("From", 0)), int(ports.get("To", 65535))
        if str(entry.get("Protocol")) == "-1" or (low <= EPHEMERAL_PORTS[1] and high >= EPHEMERAL_PORTS[0]):
            return True
    return False


class _Builder:
    """Accumulates evidence pointers and findings into a Diagnosis payload."""

    def __init__(self, obs: Observations):
        self.obs = obs
        self.evidence: list[dict[str, Any]] = []
        self.faults: dict[str, list[int]] = {}
        self.modes: dict[str, str] = {}  # fault type -> the failure catalogue entry it matched, where a finding knows
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

    def fault(self, fault_type: str, cause: str, *pointers: int | None, mode: str | None = None) -> None:
        self.faults.setdefault(fault_type, []).extend(p for p in pointers if p is not None)
        if mode is not None:
            self.modes.setdefault(fault_type, mode)
        if cause not in self.causes:
            self.causes.append(cause)

    def regression_mode(self) -> str:
        """The catalogue entry of a version that fails where the baseline's worked: the one an error of the new
        version names (the Node.js runtime client's exit...), else deployment-regression itself."""
        modes = {m.id for m in modes_by_fault_type().get("deployment_regression", [])} - {"function-not-found"}
        named = (str(e.failure_mode) for e in self.obs.log_errors() if e.failure_mode in modes)
        return next(named, "deployment-regression")

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
