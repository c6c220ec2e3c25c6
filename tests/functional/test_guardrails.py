"""Guardrails against the lab account: only exact restores of the recorded baseline, of the incident's own
resources, for diagnosed faults, survive; whatever the model claims about risk, approval or rejections."""

from __future__ import annotations

import json

import pytest

from incident_responder.account.baseline import load_baseline, record_baseline
from incident_responder.core.contracts import RemediationProposal
from tests.fakes import guard, inject

FN = "data-processor"
ROLE = "data-processor-role"


def _iam(document, role=ROLE, policy="s3-access", target=None, fault="permission_loss", **params):
    return {
        "fault_type": fault,
        "action_type": "restore_iam_policy",
        "target_resource": target or role,
        "parameters": {"role_name": role, "policy_name": policy, "policy_document": document, **params},
    }


def _concurrency(value, target=FN, function=FN, fault="throttling"):
    return {
        "fault_type": fault,
        "action_type": "update_concurrency",
        "target_resource": target,
        "parameters": {"function_name": function, "reserved_concurrent_executions": value},
    }


def _config(target=FN, function=FN, fault="timeout", **values):
    return {
        "fault_type": fault,
        "action_type": "update_function_configuration",
        "target_resource": target,
        "parameters": {"function_name": function, **values},
    }


def _baseline_doc(clients):
    return load_baseline(clients, FN).configuration.role.inline_policies["s3-access"]


# -- rejections, each with its reason -------------------------------------------------------------
_CASES = [
    (
        lambda doc: _iam(
            {
                **doc,
                "Statement": doc["Statement"]
                + [
                    {
                        "Effect": "Allow",
                        "Action": "s3:DeleteObject",
                        "Resource": "arn:aws:s3:::data-processor-input-123456789012/*",
                    }
                ],
            }
        ),
        "not in the baseline",
    ),
    (lambda doc: _iam({**doc, "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}), "wildcard"),
    (lambda doc: _iam(doc, role="other-function-role"), "not the function's role"),
    (
        lambda doc: {
            "fault_type": "permission_loss",
            "action_type": "restore_iam_policy",
            "target_resource": ROLE,
            "parameters": {"role_name": ROLE, "attach_policy_arn": "arn:aws:iam::aws:policy/AdministratorAccess"},
        },
        "was not attached in the baseline",
    ),
    (lambda doc: _iam(doc, policy="brand-new-policy"), "not in the baseline"),
    (lambda doc: _concurrency(500), "must equal the baseline (10)"),
    # Harmful "restores": below the baseline is not a restore either.
    (lambda doc: _concurrency(0), "must equal the baseline (10)"),
    (lambda doc: _concurrency(5), "must equal the baseline (10)"),
    (lambda doc: _concurrency(None), "must equal the baseline (10)"),
    (lambda doc: _config(timeout=900), "timeout 900 s must equal the baseline 30 s"),
    (lambda doc: _config(timeout=1), "timeout 1 s must equal the baseline 30 s"),
    (lambda doc: _config(fault="memory_exhaustion", memory_size=128), "memory 128 MB must equal the baseline 512"),
    (lambda doc: _config(target="x", function="payments", timeout=30), "not the incident's function"),
    # The target names another function while the parameters change this one.
    (lambda doc: _config(target="payments", timeout=30), "target_resource payments does not name"),
    (
        lambda doc: _concurrency(10, target="arn:aws:lambda:us-east-1:123456789012:function:payments"),
        "does not name",
    ),
    (lambda doc: _iam(doc, target="arn:aws:iam::123456789012:role/admin"), "does not name"),
    (
        lambda doc: {
            "fault_type": "network_block",
            "action_type": "restore_network_egress",
            "target_resource": "sg-0",
            "parameters": {
                "security_group_id": "sg-0123456789",
                "ip_permissions": [{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}],
            },
        },
        "is not the function's",
    ),
]
_IDS = [
    "extra-statement",
    "wildcard",
    "other-role",
    "admin-attach",
    "new-policy",
    "concurrency-above",
    "concurrency-zero",
    "concurrency-below",
    "concurrency-unreserve",
    "timeout-above",
    "timeout-one-second",
    "memory-128",
    "other-function",
    "target-other-function",
    "target-other-function-arn",
    "target-other-role",
    "other-sg",
]


def test_guardrails_reject_with_reasons(clients, sample, subtests):
    # One faulted account for every case: checking a proposal changes nothing.
    inject(clients, ("iam_revoke", {"target": "s3"}), ("throttle", {"reserved_concurrency": 1}))
    inject(clients, ("timeout", {"seconds": 3}), ("memory", {"mb": 256}))
    for case_id, (make_action, reason) in zip(_IDS, _CASES, strict=True):
        with subtests.test(case_id):
            checked = guard(clients, make_action(_baseline_doc(clients)))
            assert checked.actions == []
            (rejected,) = checked.rejected_actions
            assert any(reason in r for r in rejected.reasons), rejected.reasons


@pytest.mark.parametrize(
    "make_action, said",
    [
        (lambda: _concurrency(10, target=f"arn:aws:lambda:us-east-1:210987654321:function:{FN}"), "account"),
        (lambda: _concurrency(10, target=f"arn:aws:lambda:eu-west-1:123456789012:function:{FN}"), "Region"),
        (lambda: _config(timeout=30, target=f"arn:aws-cn:lambda:us-east-1:123456789012:function:{FN}"), "partition"),
        (lambda: _iam({}, target=f"arn:aws:iam::210987654321:role/{ROLE}"), "account"),
    ],
    ids=["function-other-account", "function-other-region", "function-other-partition", "role-other-account"],
)
def test_an_arn_of_another_account_region_or_partition_is_rejected_though_its_name_matches(
    clients, sample, make_action, said
):
    """The person is shown the target's ARN: one naming another account's (or Region's) resource of the same name
    must never approve a change to this account's."""
    inject(clients, ("iam_revoke", {"target": "s3"}), ("throttle", {"reserved_concurrency": 1}))
    inject(clients, ("timeout", {"seconds": 3}))
    action = make_action()
    if action["action_type"] == "restore_iam_policy":
        action["parameters"]["policy_document"] = _baseline_doc(clients)
    checked = guard(clients, action)
    assert checked.actions == []
    (rejected,) = checked.rejected_actions
    assert any("not this" in r and said in r for r in rejected.reasons), rejected.reasons


def test_a_statement_an_attacker_added_to_the_current_policy_is_not_trusted(clients, sample):
    """The current policy is what an attacker can change; only the baseline is ground truth."""
    doc = _baseline_doc(clients)
    planted = {"Sid": "Planted", "Effect": "Allow", "Action": "s3:DeleteBucket", "Resource": "*"}
    clients.get("iam").put_role_policy(
        RoleName=ROLE, PolicyName="s3-access", PolicyDocument=json.dumps({**doc, "Statement": [planted]})
    )
    checked = guard(clients, _iam({**doc, "Statement": doc["Statement"] + [planted]}))
    assert checked.actions == []
    assert any("DeleteBucket" in r and "not in the baseline" in r for r in checked.rejected_actions[0].reasons)


def test_an_action_for_a_fault_the_diagnosis_does_not_contain_is_rejected(clients, sample):
    inject(clients, ("throttle", {"reserved_concurrency": 0}))
    checked = guard(clients, _concurrency(10), diagnosed=["permission_loss"])
    assert checked.actions == []
    assert "throttling is not in the diagnosis (permission_loss)" in checked.rejected_actions[0].reasons[0]


def test_duplicate_actions_are_rejected_after_the_first(clients, sample):
    inject(clients, ("throttle", {"reserved_concurrency": 0}))
    same = _concurrency(10)
    checked = guard(clients, same, {**same, "reasoning": "again"}, _concurrency(10, target=sample.function_arn))
    assert len(checked.actions) == 1 and len(checked.rejected_actions) == 2
    assert all("duplicates action 1" in r.reasons[0] for r in checked.rejected_actions)


def test_an_action_that_changes_nothing_is_rejected(clients, sample):
    checked = guard(clients, _config(timeout=30))
    assert checked.actions == [] and "already" in checked.rejected_actions[0].reasons[0]


def test_risk_and_approval_are_policy_not_model_output(clients, sample):
    inject(clients, ("iam_revoke", {"target": "s3"}))
    action = {**_iam(_baseline_doc(clients)), "risk_level": "low", "requires_approval": False}
    checked = guard(clients, action)
    (kept,) = checked.actions
    assert (kept.risk_level, kept.requires_approval) == ("high", True)


def test_rejections_are_written_by_the_guardrails_only(clients, sample):
    from incident_responder.account.state import read_function_configuration
    from incident_responder.guardrails.policy import apply_guardrails

    invented = {"action": _concurrency(10), "reasons": ["the model says so"]}
    proposal = RemediationProposal.model_validate({"incident_id": "i-1", "actions": [], "rejected_actions": [invented]})
    current = read_function_configuration(clients, FN)
    checked = apply_guardrails(proposal, current, load_baseline(clients, FN).configuration, diagnosed_faults=[])
    assert checked.rejected_actions == []


def test_restoring_no_reservation_is_kept_and_a_value_is_not(clients, sample):
    """Most functions have no reservation: removing the one chaos put there is the restore."""
    clients.get("lambda").delete_function_concurrency(FunctionName=FN)
    record_baseline(clients, FN)
    inject(clients, ("throttle", {"reserved_concurrency": 0}))
    checked = guard(clients, _concurrency(None), _concurrency(10))
    assert [a.parameters["reserved_concurrent_executions"] for a in checked.actions] == [None]
    assert "must equal the baseline (no reservation)" in checked.rejected_actions[0].reasons[0]


def test_a_malformed_action_is_rejected_not_raised(clients, sample):
    """A guardrail never crashes on model output: parameters that do not validate are a reason."""
    from incident_responder.account.state import read_function_configuration
    from incident_responder.core.contracts import RemediationAction
    from incident_responder.guardrails.policy import apply_guardrails

    action = RemediationAction.model_construct(
        fault_type="throttling", action_type="update_concurrency", target_resource=FN, parameters={"x": 1}
    )
    proposal = RemediationProposal.model_construct(incident_id="i-1", actions=[action], rejected_actions=[])
    current = read_function_configuration(clients, FN)
    checked = apply_guardrails(proposal, current, load_baseline(clients, FN).configuration, ["throttling"])
    assert checked.actions == [] and "parameters" in checked.rejected_actions[0].reasons[0]


# -- evidence for a change comes from the account -----------------------------------------------------
def test_a_restore_no_difference_from_the_baseline_supports_is_refused_whatever_the_logs_say(clients, sample):
    """The logs may say "AccessDenied on s3:GetObject" (anyone who can make the function fail can write that); with
    the role's policy equal to its baseline, re-putting it is no restore: nothing in the account justifies it."""
    checked = guard(clients, _iam(_baseline_doc(clients)))
    assert checked.actions == []
    assert "no difference between the account and its baseline supports this" in checked.rejected_actions[0].reasons[0]
    assert "role.inline_policies.s3-access" in checked.rejected_actions[0].reasons[0]


def test_attaching_a_managed_policy_attached_now_is_refused(clients, sample):
    iam = clients.get("iam")
    document = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"}],
    }
    arn = iam.create_policy(PolicyName="orders-send", PolicyDocument=json.dumps(document))["Policy"]["Arn"]
    iam.attach_role_policy(RoleName=ROLE, PolicyArn=arn)
    record_baseline(clients, FN)
    action = _iam(None, attach_policy_arn=arn)
    del action["parameters"]["policy_name"], action["parameters"]["policy_document"]
    checked = guard(clients, action)
    assert checked.actions == [] and "is attached now" in checked.rejected_actions[0].reasons[0]
    iam.detach_role_policy(RoleName=ROLE, PolicyArn=arn)
    assert guard(clients, action).actions  # detached since the baseline: the difference supports it


# -- a poisoned baseline -----------------------------------------------------------------------------
ADMIN_STATEMENT = {"Effect": "Allow", "Action": "*", "Resource": "*"}


def _poison(clients, kind):
    """Onboard the function while it holds a value no restore may bring back; then take that value away."""
    iam, lam = clients.get("iam"), clients.get("lambda")
    if kind == "wildcard":
        document = {"Version": "2012-10-17", "Statement": [ADMIN_STATEMENT]}
        iam.put_role_policy(RoleName=ROLE, PolicyName="ops-admin", PolicyDocument=json.dumps(document))
        record_baseline(clients, FN)
        iam.delete_role_policy(RoleName=ROLE, PolicyName="ops-admin")
        return _iam(document, policy="ops-admin", fault="permission_loss"), "role.inline_policies.ops-admin"
    if kind == "managed-wildcard":  # a customer managed policy: its document is read when onboarding
        document = json.dumps({"Version": "2012-10-17", "Statement": [ADMIN_STATEMENT]})
        arn = iam.create_policy(PolicyName="ops-admin", PolicyDocument=document)["Policy"]["Arn"]
        iam.attach_role_policy(RoleName=ROLE, PolicyArn=arn)
        record_baseline(clients, FN)
        iam.detach_role_policy(RoleName=ROLE, PolicyArn=arn)
        action = _iam(None, fault="permission_loss", attach_policy_arn=arn)
        del action["parameters"]["policy_name"], action["parameters"]["policy_document"]
        return action, f"role.attached_policy_arns.{arn}"
    if kind == "zero-concurrency":
        lam.put_function_concurrency(FunctionName=FN, ReservedConcurrentExecutions=0)
        record_baseline(clients, FN)
        lam.put_function_concurrency(FunctionName=FN, ReservedConcurrentExecutions=5)
        return _concurrency(0), "reserved_concurrency"
    lam.update_function_configuration(FunctionName=FN, Timeout=1)
    record_baseline(clients, FN)
    lam.update_function_configuration(FunctionName=FN, Timeout=30)
    return _config(timeout=1), "timeout"


@pytest.mark.parametrize("kind", ["wildcard", "managed-wildcard", "zero-concurrency", "tiny-timeout"])
def test_a_poisoned_baseline_is_never_restored(clients, sample, kind):
    """Defect: a baseline recorded while the role had Action * (or at concurrency 0) made that a "restore"."""
    from incident_responder.actions.concurrency import get_concurrency_restore_info
    from incident_responder.actions.function_configuration import get_function_config_restore_info
    from incident_responder.actions.iam import get_iam_restore_info

    action, path = _poison(clients, kind)
    baseline = load_baseline(clients, FN)
    assert path in baseline.not_restorable_paths()  # recorded with its reason, for the operator to see
    checked = guard(clients, action)
    assert checked.actions == []
    assert any("never" in r or "not restorable" in r for r in checked.rejected_actions[0].reasons), checked
    lookup = {
        "wildcard": get_iam_restore_info,
        "managed-wildcard": get_iam_restore_info,
        "zero-concurrency": get_concurrency_restore_info,
        "tiny-timeout": get_function_config_restore_info,
    }[kind](clients, FN)
    assert lookup.actions == [] and lookup.not_restorable, lookup  # never offered to the model


def test_a_baseline_item_written_by_hand_is_judged_as_it_is_loaded(clients, sample):
    ddb = clients.get("dynamodb")
    item = ddb.get_item(TableName="incident-baselines", Key={"function_name": {"S": FN}})["Item"]
    configuration = json.loads(item["configuration"]["S"])
    configuration["role"]["inline_policies"]["s3-access"]["Statement"].append(ADMIN_STATEMENT)
    item["configuration"] = {"S": json.dumps(configuration)}
    item.pop("not_restorable", None)
    ddb.put_item(TableName="incident-baselines", Item=item)
    inject(clients, ("iam_revoke", {"target": "s3"}))
    document = load_baseline(clients, FN).configuration.role.inline_policies["s3-access"]
    checked = guard(clients, _iam(document))
    assert checked.actions == []
    assert any("every action of every service" in r for r in checked.rejected_actions[0].reasons)


# -- what survives --------------------------------------------------------------------------------
def test_guardrails_keep_an_exact_baseline_restore(clients, sample):
    inject(
        clients,
        ("iam_revoke", {"target": "s3"}),
        ("timeout", {"seconds": 1}),
        ("throttle", {"reserved_concurrency": 0}),
    )
    checked = guard(
        clients,
        _iam(_baseline_doc(clients), target=f"arn:aws:iam::123456789012:role/{ROLE}"),
        _config(timeout=30, target=sample.function_arn),
        _concurrency(10),
    )
    assert len(checked.actions) == 3 and checked.rejected_actions == []


def test_nacl_removal_only_of_entries_added_since_the_baseline(clients, sample):
    inject(clients, ("network_block", {}))
    remove = lambda rule: {  # noqa: E731
        "fault_type": "network_block",
        "action_type": "restore_network_egress",
        "target_resource": sample.network_acl_id,
        "parameters": {"remove_nacl_entries": [{"network_acl_id": sample.network_acl_id, "rule_number": rule}]},
    }
    checked = guard(clients, remove(1), remove(100))
    assert [a.parameters["remove_nacl_entries"][0]["rule_number"] for a in checked.actions] == [1]
    assert "is in the baseline" in checked.rejected_actions[0].reasons[0]
