from __future__ import annotations

import pytest
from pydantic import ValidationError

from incident_responder.core.contracts import RemediationAction, RemediationProposal

IAM = {"role_name": "r", "policy_name": "p", "policy_document": {"Statement": []}}


def action(fault, kind, params, **extra):
    return {"fault_type": fault, "action_type": kind, "target_resource": "t", "parameters": params, **extra}


@pytest.mark.parametrize(
    "fault, kind, params, words",
    [
        ("permission_loss", "update_concurrency", IAM, "function_name"),  # parameters of another action type
        ("throttling", "update_concurrency", {"function_name": "f"}, "reserved_concurrent_executions"),
        (
            "timeout",
            "update_function_configuration",
            {"function_name": "f"},
            "timeout, memory_size and/or ephemeral_storage",
        ),
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


# -- what a hosted model sees: submit_proposal's schema ----------------------------------------------
def submit_proposal_schema() -> dict:
    from incident_responder.agent.spec import model_tool_schema
    from incident_responder.proposal.proposer import proposer_spec

    return model_tool_schema(proposer_spec(None, "i-1").payload_model)


def test_submit_proposal_publishes_every_action_types_parameter_names():
    from incident_responder.core.contracts import PARAMETERS_FOR_ACTION

    schema = submit_proposal_schema()
    variants = schema["properties"]["actions"]["items"]["oneOf"]
    by_type = {v["properties"]["action_type"]["const"]: v["properties"]["parameters"] for v in variants}
    assert set(by_type) == {a.value for a in PARAMETERS_FOR_ACTION}
    for action_type, params_model in PARAMETERS_FOR_ACTION.items():
        published = by_type[action_type.value]
        assert published.get("type") == "object" and set(published["properties"]) == set(params_model.model_fields)
    text = str(schema)
    assert "$ref" not in text and "discriminator" not in text  # self-contained for every model API
    for name in ("reserved_concurrent_executions", "policy_document", "remove_nacl_entries", "memory_size"):
        assert name in text


def test_what_deterministic_code_decides_is_not_in_the_models_schema():
    schema = submit_proposal_schema()
    action_fields = set(schema["properties"]["actions"]["items"]["oneOf"][0]["properties"])
    assert action_fields == {"fault_type", "action_type", "target_resource", "reasoning", "parameters"}
    assert "rejected_actions" not in schema["properties"] and "incident_id" not in schema["properties"]


def test_a_submission_setting_risk_or_approval_is_refused():
    from incident_responder.core.contracts import ProposalSubmission

    sneaky = action("permission_loss", "restore_iam_policy", IAM, requires_approval=False, risk_level="low")
    with pytest.raises(ValidationError, match="requires_approval"):
        ProposalSubmission.model_validate({"actions": [sneaky]})
    with pytest.raises(ValidationError, match="rejected_actions"):
        ProposalSubmission.model_validate({"actions": [], "rejected_actions": []})


def test_a_null_reservation_survives_into_the_stored_proposal():
    """Deleting the reservation (a baseline without one) is a null that must not be dropped on the way."""
    from incident_responder.core.contracts import ProposalSubmission

    submission = ProposalSubmission.model_validate(
        {
            "actions": [
                action(
                    "throttling",
                    "update_concurrency",
                    {"function_name": "f", "reserved_concurrent_executions": None},
                )
            ]
        }
    )
    proposal = submission.to_proposal("i-1")
    stored = RemediationProposal.model_validate(proposal.model_dump(mode="json"))
    assert stored.actions[0].parameters == {"function_name": "f", "reserved_concurrent_executions": None}


def test_the_proposer_is_offered_only_the_action_types_of_the_diagnosed_faults():
    from incident_responder.agent.spec import model_tool_schema
    from incident_responder.core.contracts import ProposalSubmission, submission_for
    from incident_responder.proposal.proposer import proposer_spec

    def offered(faults) -> set[str]:
        items = model_tool_schema(proposer_spec(None, "i-1", faults).payload_model)["properties"]["actions"]["items"]
        return {v["properties"]["action_type"]["const"] for v in items.get("oneOf", [items])}

    assert submission_for(None) is ProposalSubmission
    nothing = submission_for(["application_error"])  # no action fixes it: an empty list, no action type offered
    assert nothing.model_validate({"actions": []}).actions == []
    with pytest.raises(ValidationError):
        nothing.model_validate({"actions": [{"action_type": "update_concurrency"}]})
    assert "oneOf" not in str(model_tool_schema(nothing))
    assert submission_for(["timeout"]).model_validate({"actions": []}).actions == []
    assert offered(["timeout", "application_error"]) == {"update_function_configuration"}
    assert offered(["permission_loss", "async_config_changed"]) == {"restore_iam_policy", "restore_event_invoke_config"}
