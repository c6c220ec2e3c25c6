"""Stored incidents as the view and the report read them, by status."""

from __future__ import annotations

import json

PROPOSAL = {
    "confidence": "high",
    "actions": [
        {
            "execution_order": 1,
            "action_type": "restore_iam_policy",
            "target_resource": "arn:aws:iam::123456789012:role/data-processor-role",
            "risk_level": "high",
            "requires_approval": True,
            "parameters": {"role_name": "data-processor-role", "policy_name": "s3-access"},
        }
    ],
    "rejected_actions": [{"action": {"action_type": "update_function_configuration"}, "reasons": ["no baseline"]}],
    "unresolvable_faults": [],
}

TIMINGS = {
    "received_at": "2026-11-24T01:56:33.712940+00:00",
    "detected_at": "2026-11-24T01:56:32.008+0000",
    "investigating_at": "2026-11-24T01:56:33.904421+00:00",
    "approved_at": "2026-11-24T01:56:37Z",
    "ended_at": "2026-11-24T01:56:39.047800+00:00",
}

TOOL_RESULTS = [
    {"tool": "get_config_drift", "result": {"differences": [{"path": "role.inline_policies.s3-access", "change": "removed"}]}},
    {"tool": "get_recent_logs", "result": {"events": [{"message": "[ERROR] AccessDenied calling GetObject"}]}},
]  # fmt: skip

CHECKS = [
    {"index": 0, "verified": True},
    {"index": 1, "verified": False, "reason": "field 'events[9].message' does not resolve"},
]


def _shown(status: str) -> dict:
    failed = status in {"ERROR", "FAILED", "PROPOSAL_FAILED", "REMEDIATION_FAILED"}
    return {
        "incident_id": "data-processor-20261124T015632-125ce5b1b0",
        "status": status,
        "error_category": "ModelTransientError" if failed else None,
        "error_reason": "throttled by the model" if failed else None,
        "timings": TIMINGS,
        "diagnosis": None if status in {"ERROR", "SUPPRESSED"} else DIAGNOSIS,
        # What the store keeps of the evidence report beside the diagnosis.
        "evidence": None if status in {"ERROR", "SUPPRESSED"} else {"total": 2, "verified": 1, "grounded_ratio": 0.5},
        "proposal": PROPOSAL if status not in {"ERROR", "SUPPRESSED", "FAILED", "PROPOSAL_FAILED"} else None,
        "review": {"outcome": "NEEDS_APPROVAL", "summary": "1 action(s) reviewed"} if status != "ERROR" else None,
        "approval": {"approved_by": "ops@example.com", "approval_channel": "cli", "approved_at": "2026-11-24T01:56:37Z"}
        if status in {"REMEDIATED", "ROLLED_BACK", "REMEDIATION_FAILED"}
        else {"rejected_by": "ops@example.com", "rejection_reason": "not now"}
        if status == "REJECTED"
        else None,
        "verification": json.dumps({"outcome": "NOT_FIXED", "summary": "still failing"})
        if status == "ROLLED_BACK"
        else {"outcome": "VERIFIED", "summary": "healthy"}
        if status == "REMEDIATED"
        else None,
        "rollback": {"rollback_reason": "the symptom remained"} if status == "ROLLED_BACK" else None,
        "states_visited": ["RECEIVED", "INVESTIGATING", status],
        "artifacts": ["s3://bucket/incidents/x/investigation.json"],
    }


def _detail(status: str) -> dict:
    detail = _shown(status)
    ledger_statuses = {"REMEDIATED", "ROLLED_BACK", "REMEDIATION_FAILED"}
    detail.update(
        function_name="data-processor",
        alert={"alarm_name": "data-processor-errors", "function_name": "data-processor"},
        tool_results=TOOL_RESULTS,
        evidence_checks=CHECKS,
        usage={"investigation": {"llm_calls": 2, "tool_calls": 3, "input_tokens": 5400, "output_tokens": 339}},
        ledger=[
            {
                "execution_order": 1,
                "action": detail["proposal"]["actions"][0],
                "prior": {"absent": True, "policy_name": "s3-access"},
                "progress": "undone" if status == "ROLLED_BACK" else "applied",
                "applied_at": "2026-11-24T01:56:38Z",
            }
        ]
        if status in ledger_statuses
        else [],
    )
    return detail


DIAGNOSIS: dict = {
    "root_cause": "data-processor: the execution role's s3-access changed from the baseline (removed).",
    "fault_types": ["permission_loss"],
    "severity": "high",
    "confidence": "high",
    "investigation_gaps": ["network not checked"],
}
