from __future__ import annotations

import pytest

from incident_responder.agent.evidence import resolve_path, verify_diagnosis
from incident_responder.core.contracts import Diagnosis
from tests.fakes import diagnosis

RESULTS = [
    {
        "tool": "get_config_drift",
        "arguments": {},
        "result": {"differences": [{"path": "timeout", "baseline": 30, "current": 1}], "drifted": True},
    },
    {
        "tool": "get_recent_logs",
        "arguments": {},
        "result": {"events": [{"message": "START"}, {"message": "Task timed out after 1.00 seconds"}]},
    },
    {
        "tool": "get_lambda_config",
        "arguments": {},
        "result": {"Timeout": 1, "ReservedConcurrentExecutions": 0, "VpcConfig": None},
    },
]


def pointer(tool, field, value):
    return {"tool": tool, "field": field, "value": value, "interpretation": "x"}


def verify(*pointers, **changes):
    d = Diagnosis.model_validate(diagnosis(evidence=list(pointers), remediation_plan=[], **changes))
    return verify_diagnosis(d, RESULTS)


@pytest.mark.parametrize(
    "p",
    [
        pointer("get_config_drift", "differences[0].path", "timeout"),
        pointer("get_config_drift", "differences[0].current", "1"),
        pointer("get_recent_logs", "events[1].message", "Task timed out"),
        pointer("get_recent_logs", "events[*].message", "timed out after 1.00"),
        pointer("get_lambda_config", "ReservedConcurrentExecutions", "0"),
        pointer("get_lambda_config", "VpcConfig", "null"),
        pointer("get_config_drift", "drifted", "true"),
    ],
)
def test_grounded_pointers_are_verified(p):
    diag, report = verify(p)
    assert diag.evidence[0].verified and report.grounded_ratio == 1.0


@pytest.mark.parametrize(
    "p, reason",
    [
        (pointer("get_config_drift", "differences[3].path", "timeout"), "does not resolve"),
        (pointer("get_config_drift", "changes[0].path", "timeout"), "does not resolve"),
        (pointer("get_config_drift", "differences[0].path", "memory_size"), "is not at"),
        (pointer("get_lambda_config", "Timeout", "30"), "is not at"),
        (pointer("get_recent_logs", "events[1].message", "ti"), "is not at"),  # too short to count as an excerpt
        (pointer("get_iam_state", "role_name", "data-processor-role"), "was not called"),
    ],
)
def test_ungrounded_pointers_are_marked_with_the_reason(p, reason):
    diag, report = verify(p)
    assert not diag.evidence[0].verified
    assert reason in report.checks[0].reason
    assert report.grounded_ratio == 0.0
    assert diag.confidence == "low" and report.confidence_capped


def test_grounded_ratio_and_no_cap_with_some_verified_evidence():
    diag, report = verify(
        pointer("get_config_drift", "differences[0].path", "timeout"), pointer("get_lambda_config", "Timeout", "99")
    )
    assert (report.verified, report.total, report.grounded_ratio) == (1, 2, 0.5)
    assert diag.confidence == "high" and not report.confidence_capped


def test_a_step_resting_only_on_unverified_evidence_caps_confidence():
    d = Diagnosis.model_validate(
        diagnosis(
            evidence=[
                pointer("get_config_drift", "differences[0].path", "timeout"),
                pointer("get_lambda_config", "Timeout", "99"),
            ],
            remediation_plan=[{"action": "raise the timeout", "evidence_basis": [1]}],
        )
    )
    diag, report = verify_diagnosis(d, RESULTS)
    assert diag.confidence == "low" and report.confidence_capped


def test_model_cannot_mark_its_own_evidence_verified():
    p = {**pointer("get_iam_state", "role_name", "x"), "verified": True}
    diag, _ = verify(p)
    assert diag.evidence[0].verified is False


def test_resolve_path_edges():
    data = {"a": [{"b": 1}, {"b": 2}], "inline_policies": {"s3-access": {"Statement": []}}}
    assert resolve_path(data, "a[*].b") == [1, 2]
    assert resolve_path(data, "a[-1].b") == [2]
    assert resolve_path(data, "inline_policies.s3-access.Statement") == [[]]
    assert resolve_path(data, "a[9].b") == [] and resolve_path(data, "a.b") == []


# -- which verified pointers support which fault --------------------------------------------------
def test_every_fault_an_action_fixes_has_signs_of_its_own_evidence():
    """A fault without signs took any verified pointer as its evidence (an IAM one for a deleted secret), so the
    review policy's "no verified evidence for this fault" never fired for it."""
    from incident_responder.agent.evidence import FAULT_SIGNS
    from incident_responder.core.contracts import ACTION_FOR_FAULT

    assert set(ACTION_FOR_FAULT) - set(FAULT_SIGNS) == set()


IAM_POINTER = {"tool": "get_iam_state", "field": "role_name", "value": "data-processor-role", "verified": True}


@pytest.mark.parametrize(
    "fault, pointer",
    [
        (
            "dependency_missing",
            {"tool": "get_dependencies", "field": "secrets[0].scheduled_for_deletion", "value": True},
        ),
        (
            "event_source_misconfigured",
            {
                "tool": "get_dependencies",
                "field": "event_source_mappings[0].visibility_timeout_below_six_times_function_timeout",
                "value": True,
            },
        ),
        (
            "storage_exhaustion",
            {"tool": "get_config_drift", "field": "differences[0].path", "value": "ephemeral_storage"},
        ),
    ],
)
def test_a_fault_is_supported_by_its_own_evidence_never_by_an_unrelated_pointer(fault, pointer):
    from incident_responder.agent.evidence import verified_evidence_by_fault

    only_iam = {"fault_types": [fault], "evidence": [IAM_POINTER]}
    assert verified_evidence_by_fault(only_iam) == {fault: []}
    its_own = {"fault_types": [fault], "evidence": [IAM_POINTER, {**pointer, "verified": True}]}
    assert verified_evidence_by_fault(its_own) == {fault: [1]}
