"""The paths through the lifecycle the tests expect: the states an incident enters on each."""

from __future__ import annotations

import json

from incident_responder.intake.alerts import parse_alert
from incident_responder.lab.engine import wait_for_execution
from incident_responder.state.lifecycle import (
    execution_input,
)

HAPPY = [
    "RECEIVED",
    "Function budget",
    "Account budget",
    "INVESTIGATING",
    "Run investigator agent",
    "Diagnosis found?",
    "DIAGNOSED",
    "PROPOSING",
    "Run proposer agent",
    "Proposal ready?",
    "PROPOSAL_READY",
    "Notify operators",
    "Closed loop?",
    "Done",
]


def proposed(event, context):
    return {
        "incident_id": event["incident"]["incident_id"],
        "outcome": "PROPOSAL_READY",
        "end_reason": "submitted",
        "proposal": {
            "actions": [
                {
                    "execution_order": 1,
                    "action_type": "restore_iam_policy",
                    "target_resource": "arn:aws:iam::123456789012:role/data-processor-role",
                    "reasoning": "inline policy s3-access is missing compared with the baseline",
                }
            ],
            "rejected_actions": [],
            "unresolvable_faults": [],
        },
        "proposal_ref": "s3://bucket/incidents/x/proposal.json",
        "notification": {
            "subject": "Remediation proposed: data-processor (permission_loss)",
            "message": f"Incident {event['incident']['incident_id']} on function data-processor.\n...",
        },
        "actions": 1,
        "rejected": 0,
        "unresolvable_faults": [],
        "metrics": {"llm_calls": 2},
    }


def diagnosed(event, context):
    return {
        "incident_id": event["incident"]["incident_id"],
        "outcome": "DIAGNOSED",
        "end_reason": "submitted",
        "diagnosis_summary": SUMMARY,
        "diagnosis": {**SUMMARY, "evidence": []},
        "diagnosis_ref": "s3://bucket/incidents/x/investigation.json",
        "metrics": {"grounded_ratio": 1.0, "llm_calls": 4},
    }


def start(clients, machine, function="data-processor", at="2026-11-23T04:00:00Z"):
    incident = parse_alert({"function_name": function, "detected_at": at, "error_type": "KeyError"})
    sfn = clients.get("stepfunctions")
    arn = sfn.start_execution(
        stateMachineArn=machine, name=incident.incident_id, input=json.dumps(execution_input(incident))
    )["executionArn"]
    return incident, wait_for_execution(sfn, arn)


SUMMARY = {
    "root_cause": "role lost s3-access",
    "fault_types": ["permission_loss"],
    "severity": "high",
    "confidence": "high",
}
