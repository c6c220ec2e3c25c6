"""The lab's incident runs: the final record of one incident, as ``responder run --json`` prints it."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from pydantic import BaseModel

from incident_responder.lab.emulation.invocation import BurstResult
from incident_responder.lab.tokens import AGENTS, USAGE
from incident_responder.reporting.view import APPROVAL_KEYS
from incident_responder.state.lifecycle import TERMINAL_STATUSES, execution_path, get_incident_state
from incident_responder.state.store import load_record

# The lifecycle's failure ends (the other terminal statuses are not failures).
FAILED_STATUSES = {"ERROR", "FAILED", "PROPOSAL_FAILED", "REMEDIATION_FAILED"}
# Incident-state timestamps, in lifecycle order.
TIMINGS = (
    "detected_at",
    "created_at",
    "received_at",
    "investigating_at",
    "diagnosed_at",
    "proposing_at",
    "proposal_ready_at",
    "reviewing_at",
    "awaiting_approval_at",
    "approved_at",
    "remediating_at",
    "verifying_at",
    "remediated_at",
    "rolling_back_at",
    "rolled_back_at",
    "ended_at",
)


class IncidentRecord(BaseModel):
    """The final record of one incident, as ``responder run --json`` prints it."""

    incident_id: str | None
    status: str
    error_category: str | None = None
    error_reason: str | None = None
    diagnosis: dict[str, Any] | None = None
    evidence: dict[str, Any] | None = None
    proposal: dict[str, Any] | None = None
    metrics: dict[str, Any]
    execution: dict[str, Any]
    timings: dict[str, str] = {}
    workload: dict[str, Any] = {}
    review: dict[str, Any] | None = None
    approval: dict[str, Any] | None = None
    remediation: dict[str, Any] | None = None
    end_state: dict[str, Any] = {}
    earlier: list[dict[str, Any]] = []  # the scenario's earlier incidents (its function's past): each one's summary

    @property
    def no_alert(self) -> str | None:
        """Why there is no incident to follow, when the workload raised no alarm: what its invocations did."""
        if self.status != "NO_ALERT":
            return None
        outcomes = self.workload.get("invocations") or []
        counts = ", ".join(f"{n} {outcome}" for outcome, n in Counter(outcomes).items()) or "none made"
        return f"the workload raised no alarm ({len(outcomes)} invocations: {counts}): no incident to follow"

    @property
    def failed(self) -> bool:
        """The incident ended ERROR, FAILED or PROPOSAL_FAILED, or never reached a terminal status."""
        return self.incident_id is not None and self.status not in TERMINAL_STATUSES - FAILED_STATUSES


class IncidentRecords:
    """How a run reads its incident's record back from the stores."""

    def _record(
        self, incident_id: str | None, execution: dict[str, Any] | None, burst: BurstResult, started: float
    ) -> IncidentRecord:
        sfn = self.clients.get("stepfunctions")
        latency = int((time.monotonic() - started) * 1000)
        workload = {"invocations": [i.status for i in burst.invocations], "alert": _alert_name(burst.alert)}
        if incident_id is None or execution is None:
            return IncidentRecord(
                incident_id=None, status="NO_ALERT", metrics={"latency_ms": latency}, execution={}, workload=workload
            )
        state_table = self.stack.physical["IncidentStateTable"]
        context_table = self.stack.physical["IncidentContextTable"]
        state = get_incident_state(self.clients, state_table, incident_id) or {}
        context = load_record(self.clients, context_table, incident_id, "investigation") or {}
        summary = context.get("summary", {})
        metrics = summary.get("metrics", {})
        proposal_stored = load_record(self.clients, context_table, incident_id, "proposal") or {}
        proposal_record = proposal_stored.get("summary", {})
        proposal_metrics = proposal_record.get("metrics", {})
        visited = execution_path(sfn, execution["executionArn"])
        timings = {k: state[k] for k in TIMINGS if k in state}
        review_stored = load_record(self.clients, context_table, incident_id, "review") or {}
        review_record = review_stored.get("summary", {})
        approval = {key: state[key] for key in APPROVAL_KEYS if key in state}
        agents = [metrics, proposal_metrics, review_record.get("metrics", {})]
        remediation = {
            key: state[key]
            for key in ("verification_json", "undo_json", "rollback_reason", "applied_actions")
            if key in state
        }
        return IncidentRecord(
            incident_id=incident_id,
            status=state.get("status", "UNKNOWN"),
            error_category=state.get("error_category"),
            error_reason=state.get("error_reason"),
            diagnosis=summary.get("diagnosis"),
            evidence=summary.get("evidence"),
            proposal=proposal_record.get("proposal"),
            metrics={
                "tool_calls": sum(m.get("tool_calls", 0) for m in agents),
                "llm_calls": sum(m.get("llm_calls", 0) for m in agents),
                "total_tokens": sum(m.get("total_tokens", 0) for m in agents),
                "grounded_ratio": metrics.get("grounded_ratio"),
                "latency_ms": latency,
                "input_tokens": sum(m.get("input_tokens", 0) for m in agents),
                "output_tokens": sum(m.get("output_tokens", 0) for m in agents),
                "cache_read_tokens": sum(m.get("cache_read_tokens", 0) for m in agents),
                "cache_write_tokens": sum(m.get("cache_write_tokens", 0) for m in agents),
                "model_ms": sum(m.get("model_ms", 0) for m in agents),
                "tool_ms": sum(m.get("tool_ms", 0) for m in agents),
                "tool_output_bytes": sum(m.get("tool_output_bytes", 0) for m in agents),
                "tokens_by_agent": dict(zip(AGENTS, (m.get("total_tokens", 0) for m in agents), strict=True)),
                "turns_by_agent": dict(zip(AGENTS, (m.get("llm_calls", 0) for m in agents), strict=True)),
                "usage_by_agent": {
                    agent: {k: m.get(k, 0) for k in USAGE} for agent, m in zip(AGENTS, agents, strict=True)
                },
                "tool_output_by_tool": tool_output([context, proposal_stored, review_stored]),
            },
            execution={
                "name": execution["name"],
                "arn": execution["executionArn"],
                "status": execution["status"],
                "states_visited": visited,
                "terminal": state.get("status") in TERMINAL_STATUSES,
            },
            timings=timings,
            workload=workload,
            review=review_record or None,
            approval=approval or None,
            remediation=remediation or None,
        )


def tool_output(records: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Each tool's calls and the characters its answers put before the model, over the agents' transcripts."""
    found: dict[str, dict[str, int]] = {}
    for record in records:
        for entry in record.get("transcript") or []:
            if entry.get("kind") == "tool":
                tool = found.setdefault(str(entry.get("tool")), {"calls": 0, "chars": 0})
                tool["calls"] += 1
                tool["chars"] += int(entry.get("bytes") or 0)
    return dict(sorted(found.items()))


def earlier_summary(record: IncidentRecord) -> dict[str, Any]:
    """What a scenario's record keeps of one of its earlier incidents: how it ended and what its agents cost."""
    return {
        "incident_id": record.incident_id,
        "status": record.status,
        **{key: record.metrics.get(key) for key in ("turns_by_agent", "tokens_by_agent", "latency_ms")},
    }


def _alert_name(alert: dict[str, Any] | None) -> str | None:
    """What the record names the alert by: the alarm's name, or a project alert's error type."""
    alert = alert or {}
    return alert.get("AlarmName") or alert.get("error_type")
