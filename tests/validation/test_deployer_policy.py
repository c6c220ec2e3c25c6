"""What the principal running `sam deploy` needs (docs/deployer-policies/): derived from the template's resource
types and CloudFormation's own handler permissions for each (the registry schemas cfn-lint ships), and kept in step
with the template."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scripts_by_path import load_script

REPO = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def script():
    return load_script("deployer_policy")


def actions_of(statement: dict) -> list[str]:
    return [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]


def granted(script) -> set[str]:
    return {a for p in script.policies() for s in p["Statement"] for a in actions_of(s)}


def test_the_committed_policies_are_what_the_template_needs(script):
    assert script.main(["--check"]) == 0, "run `make deployer-policy` and commit docs/deployer-policies/"


def test_every_resource_type_can_be_created_and_deleted(script):
    allowed = granted(script)
    for type_name in script.resource_types():
        handlers = script.schemas()[type_name]["handlers"]
        for handler in ("create", "delete"):
            needed = {
                a
                for a in handlers[handler]["permissions"]
                if script.IAM_ACTION.match(a) and a.split(":")[0] not in script.UNUSED
            }
            assert needed <= allowed, f"{type_name} {handler}: {sorted(needed - allowed)}"
    assert {"cloudformation:CreateChangeSet", "cloudformation:ExecuteChangeSet", "s3:PutObject"} <= allowed


def test_every_action_is_an_iam_action(script):
    """Registry schemas list the odd entry that is no IAM action (the Logs group's handler: s3:REST.PUT.OBJECT)."""
    import re

    assert all(re.fullmatch(r"[a-z0-9-]+:[A-Za-z0-9]+", a) for a in granted(script))
    assert "s3:REST.PUT.OBJECT" in script.handler_permissions("AWS::Logs::LogGroup")  # why the filter is there


def test_each_policy_fits_a_managed_policy_and_roles_are_the_stacks_own(script):
    for name, text in script.rendered().items():
        document = json.loads(text)
        assert script.size(document) <= 6144, name
        for statement in document["Statement"]:
            if any(a.startswith("iam:") for a in actions_of(statement)):
                assert statement["Resource"] in (
                    "arn:aws:iam::*:role/incident-responder-*",
                    "arn:aws:iam::*:role/aws-service-role/*",
                ), statement
    assert "iam:PassRole" in granted(script)


def test_the_permissions_left_out_are_for_features_the_template_does_not_use(script):
    text = (REPO / "template.yaml").read_text()
    for service, feature in script.UNUSED.items():
        assert feature not in text, f"the template now uses {feature}: {service} permissions belong in the policy"
