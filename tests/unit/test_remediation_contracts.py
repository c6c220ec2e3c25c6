from __future__ import annotations

import pytest
from pydantic import ValidationError

from incident_responder.contracts import RemediationAction, RemediationProposal

IAM = {"role_name": "r", "policy_name": "p", "policy_document": {"Statement": []}}


def action(fault, kind, params, **extra):
    return {"fault_type": fault, "action_type": kind, "target_resource": "t", "parameters": params, **extra}


@pytest.mark.parametrize(
    "fault, kind, params, words",
    [
        ("permission_loss", "update_concurrency", IAM, "function_name"),  # parameters of another action type
        ("throttling", "update_concurrency", {"function_name": "f"}, "reserved_concurrent_executions"),
        ("timeout", "update_function_configuration", {"function_name": "f"}, "timeout and/or memory_size"),
        ("permission_loss", "restore_iam_policy", {"role_name": "r"}, "either policy_name"),
        ("network_block", "restore_network_egress", {}, "nothing to restore"),
        ("timeout", "restore_iam_policy", IAM, "does not remedy timeout"),
        ("application_error", "restore_iam_policy", IAM, "no automated action"),
        ("permission_loss", "delete_everything", IAM, "action_type"),
    ],
)
def test_parameters_must_match_the_action_type(fault, kind, params, words):
    with pytest.raises(ValidationError, match=words):
        RemediationAction.model_validate(action(fault, kind, params))


def test_actions_are_ordered_by_fault_priority_and_numbered():
    proposal = RemediationProposal.model_validate(
        {
            "incident_id": "i-1",
            "actions": [
                action(
                    "memory_exhaustion", "update_function_configuration", {"function_name": "f", "memory_size": 512}
                ),
                action(
                    "network_block",
                    "restore_network_egress",
                    {"security_group_id": "sg-1", "ip_permissions": [{"IpProtocol": "-1"}]},
                ),
                action("timeout", "update_function_configuration", {"function_name": "f", "timeout": 30}),
                action(
                    "throttling", "update_concurrency", {"function_name": "f", "reserved_concurrent_executions": 10}
                ),
                action("permission_loss", "restore_iam_policy", IAM),
            ],
            "unresolvable_faults": ["application_error"],
        }
    )
    assert [a.fault_type.value for a in proposal.actions] == [
        "permission_loss",
        "throttling",
        "network_block",
        "timeout",
        "memory_exhaustion",
    ]
    assert [a.execution_order for a in proposal.actions] == [1, 2, 3, 4, 5]


def test_a_proposal_with_only_unresolvable_faults_is_valid():
    proposal = RemediationProposal(incident_id="i-1", unresolvable_faults=["application_error"])
    assert proposal.actions == [] and proposal.unresolvable_faults == ["application_error"]
