"""What a restore may never bring back, judged from a policy document, a configuration or an action."""

from __future__ import annotations

import pytest

from incident_responder.account.network import NetworkState
from incident_responder.account.role import RoleState
from incident_responder.account.state import FunctionConfiguration, InvokePermission
from incident_responder.account.vetting import administrator_policy, broad_grants, refusals, vet
from incident_responder.core.contracts import RemediationAction


def doc(*statements):
    return {"Version": "2012-10-17", "Statement": list(statements)}


@pytest.mark.parametrize(
    "statement, said",
    [
        ({"Effect": "Allow", "Action": "*", "Resource": "*"}, "every action of every service"),
        ({"Effect": "Allow", "Action": ["*:Get*"], "Resource": "arn:aws:s3:::b/*"}, "every action of every service"),
        ({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}, "NotAction"),
        ({"Effect": "Allow", "Action": "iam:*", "Resource": "arn:aws:iam::1:role/x"}, "iam:PassRole"),
        ({"Effect": "Allow", "Action": "IAM:Put*", "Resource": "*"}, "iam:PutRolePolicy"),
        ({"Effect": "Allow", "Action": "s3:*", "Resource": "*"}, "s3:* on every resource"),
        ({"Effect": "Allow", "Action": "dynamodb:*", "NotResource": "arn:aws:dynamodb:*:*:table/x"}, "dynamodb:*"),
    ],
)
def test_broad_grants_are_named(statement, said):
    reasons = broad_grants(doc(statement))
    assert any(said in r for r in reasons), reasons


@pytest.mark.parametrize(
    "statement",
    [
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"], "Resource": "arn:aws:s3:::b/*"},
        {"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::b/*"},  # one bucket: not every resource
        {"Effect": "Allow", "Action": "logs:CreateLogStream", "Resource": "*"},
        {"Effect": "Deny", "Action": "*", "Resource": "*"},
        {"Effect": "Allow", "Action": "iam:GetRole", "Resource": "*"},
    ],
)
def test_narrow_grants_pass(statement):
    assert broad_grants(doc(statement)) == []


def test_administrator_policies_are_aws_managed_ones_by_name():
    assert administrator_policy("arn:aws:iam::aws:policy/AdministratorAccess")
    assert administrator_policy("arn:aws-us-gov:iam::aws:policy/PowerUserAccess")
    assert not administrator_policy("arn:aws:iam::123456789012:policy/AdministratorAccess")  # judged by content
    assert not administrator_policy("arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess")


def configuration(**overrides):
    role = RoleState(role_name="r", role_arn="arn:aws:iam::1:role/r", **overrides.pop("role", {}))
    values = {"reserved_concurrency": None, "timeout": 30, "memory_size": 512, **overrides}
    return FunctionConfiguration(function_name="f", role=role, network=NetworkState(in_vpc=False), **values)


def test_vet_names_each_value_with_its_path():
    poisoned = configuration(
        role={
            "inline_policies": {
                "ok": doc({"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}),
                "admin": doc({"Effect": "Allow", "Action": "*", "Resource": "*"}),
            },
            "attached_policy_arns": ["arn:aws:iam::aws:policy/AdministratorAccess"],
        },
        reserved_concurrency=0,
        timeout=1,
    )
    assert list(dict.fromkeys(n.path for n in vet(poisoned))) == [
        "role.inline_policies.admin",
        "role.attached_policy_arns.arn:aws:iam::aws:policy/AdministratorAccess",
        "reserved_concurrency",
        "timeout",
    ]
    assert vet(configuration()) == []
    managed = configuration(role={"attached_policy_arns": ["arn:aws:iam::1:policy/p"]})
    assert vet(managed) == []
    (said,) = vet(managed, {"arn:aws:iam::1:policy/p": doc({"Effect": "Allow", "Action": "*", "Resource": "*"})})
    assert said.path == "role.attached_policy_arns.arn:aws:iam::1:policy/p"


FAULT = {
    "update_concurrency": "throttling",
    "update_function_configuration": "timeout",
    "restore_invoke_permission": "invoke_permission_lost",
}


def action(action_type, **parameters):
    return RemediationAction(
        fault_type=FAULT.get(action_type, "permission_loss"),
        action_type=action_type,
        target_resource="f",
        parameters=parameters,
    )


def test_refusals_judge_the_action_itself_whatever_the_baseline():
    assert refusals(action("update_concurrency", function_name="f", reserved_concurrent_executions=0))
    assert refusals(action("update_concurrency", function_name="f", reserved_concurrent_executions=5)) == []
    assert refusals(action("update_function_configuration", function_name="f", timeout=2))
    assert refusals(action("update_function_configuration", function_name="f", timeout=3)) == []
    admin = action("restore_iam_policy", role_name="r", attach_policy_arn="arn:aws:iam::aws:policy/AdministratorAccess")
    assert "administrator policy" in refusals(admin)[0]
    wide = action(
        "restore_iam_policy",
        role_name="r",
        policy_name="p",
        policy_document=doc({"Effect": "Allow", "Action": "*", "Resource": "*"}),
    )
    assert "never granted" in refusals(wide)[0]
    ok = action(
        "restore_iam_policy",
        role_name="r",
        policy_name="p",
        policy_document=doc({"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}),
    )
    assert refusals(ok) == []
    assert "not restorable (why)" in refusals(ok, {"role.inline_policies.p": "why"})[0]


def test_a_resource_policy_statement_open_to_anyone_without_a_condition_is_never_restored():
    anyone = InvokePermission(statement_id="public", qualifier="live", principal="*")
    scoped = InvokePermission(statement_id="api", principal="*", source_arn="arn:aws:execute-api:us-east-1:1:a/*")
    (said,) = vet(configuration(invoke_permissions=[anyone, scoped]))
    assert said.path == "invoke_permissions.live:public"
    opened = action("restore_invoke_permission", function_name="f", statement_id="public", principal="*")
    assert "never granted" in refusals(opened)[0]
    service = action(
        "restore_invoke_permission",
        function_name="f",
        qualifier="live",
        statement_id="api",
        principal="apigateway.amazonaws.com",
        source_arn="arn:aws:execute-api:us-east-1:123456789012:a/*/POST/orders",
    )
    assert refusals(service) == []
    assert "not restorable" in refusals(service, {"invoke_permissions.live:api": "why"})[0]


def test_a_baseline_sending_failed_events_to_another_account_is_not_restorable():
    own, other = "arn:aws:sqs:us-east-1:1:f-dlq", "arn:aws:sqs:us-east-1:999999999999:collector"
    assert vet(configuration(dead_letter_target=own, async_on_failure=own)) == []
    found = {n.path: n.reason for n in vet(configuration(dead_letter_target=other, async_on_failure=other))}
    assert set(found) == {"dead_letter_target", "async_on_failure"}
    assert "outside the function's account 1" in found["dead_letter_target"]
