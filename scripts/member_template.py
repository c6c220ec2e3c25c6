"""Write member-account.yaml, the template a member account deploys (by hand or with StackSets), from template.yaml.

A member account holds what the central deployment needs there: a role its readers assume, a role its remediate
function assumes, and an EventBridge rule that forwards the account's alarms to the central event bus. The roles'
permissions are the central functions' own statements on the account's resources, copied from template.yaml (the
statements on the central stack's own tables, buckets, topics and state machine are left out: they stay in the central
account), so the two templates cannot drift: tests/validation/test_member_template.py renders this again and compares.

    .venv/bin/python scripts/member_template.py          # writes member-account.yaml
    .venv/bin/python scripts/member_template.py --check  # exits 1 when the committed file is stale
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from incident_responder.lab.template import load_template  # noqa: E402

OUT = REPO / "member-account.yaml"
# The central functions that read a member account (through the read role), and the one that changes it.
READERS = ["DiagnosticsMcpFunction", "RemediationMcpFunction", "ProposeFunction", "VerifyFunction", "IngestFunction"]
WRITER = "RemediateFunction"
# IAM's limit on a managed policy document (characters, whitespace not counted).
MANAGED_POLICY_LIMIT = 6144
PSEUDO = re.compile(r"\$\{AWS::[A-Za-z]+\}")


def _about_the_account(statement: dict[str, Any]) -> bool:
    """A statement on the account's own resources: every Deny (they bound the role wherever it acts), and every Allow
    whose resources name no resource of the central stack (no Ref or GetAtt, no stack-named ARN)."""
    if statement.get("Effect") == "Deny":
        return True
    resources = statement.get("Resource")
    for resource in resources if isinstance(resources, list) else [resources]:
        if isinstance(resource, str):
            continue
        text = resource.get("Fn::Sub") if isinstance(resource, dict) else None
        if not isinstance(text, str) or "${AWS::StackName}" in text or PSEUDO.sub("", text).count("${"):
            return False
    return True


def statements_of(template: dict[str, Any], function: str) -> list[dict[str, Any]]:
    """The function's own statements on the account's resources, as template.yaml writes them."""
    policies = template["Resources"][function]["Properties"].get("Policies", [])
    found = [s for p in policies if isinstance(p, dict) for s in p.get("Statement", [])]
    return [s for s in found if _about_the_account(s)]


def _size(statements: list[dict[str, Any]]) -> int:
    return len(json.dumps({"Version": "2012-10-17", "Statement": statements}, separators=(",", ":")))


def _policies(role: str, statements: list[dict[str, Any]]) -> dict[str, Any]:
    """Managed policies for ``role`` holding ``statements``, as few as IAM's size limit allows."""
    chunks: list[list[dict[str, Any]]] = [[]]
    for statement in statements:
        if chunks[-1] and _size([*chunks[-1], statement]) > MANAGED_POLICY_LIMIT:
            chunks.append([])
        chunks[-1].append(statement)
    out = {}
    for index, chunk in enumerate(chunks, start=1):
        if _size(chunk) > MANAGED_POLICY_LIMIT:
            raise SystemExit(f"{role}: a statement alone is over IAM's {MANAGED_POLICY_LIMIT}-character limit")
        out[f"{role}Policy{index}"] = {
            "Type": "AWS::IAM::ManagedPolicy",
            "Condition": "HoldsTheRoles",
            "Properties": {
                "Description": f"{role} ({index}/{len(chunks)}): copied from template.yaml by scripts/member_template.py",
                "Roles": [{"Ref": role}],
                "PolicyDocument": {"Version": "2012-10-17", "Statement": chunk},
            },
        }
    return out


def _trust(functions: list[str]) -> dict[str, Any]:
    """Only the central deployment's roles of these functions, and only with the external id."""
    principals = [
        {"Fn::Sub": f"arn:${{AWS::Partition}}:iam::${{CentralAccountId}}:role/${{CentralStackName}}-{f}Role-*"}
        for f in functions
    ]
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "TheCentralDeploymentOnly",
                "Effect": "Allow",
                "Principal": {"AWS": {"Fn::Sub": "arn:${AWS::Partition}:iam::${CentralAccountId}:root"}},
                "Action": "sts:AssumeRole",
                "Condition": {
                    "StringEquals": {"sts:ExternalId": {"Ref": "ExternalId"}},
                    "ArnLike": {"aws:PrincipalArn": principals},
                },
            }
        ],
    }


def render(template: dict[str, Any]) -> dict[str, Any]:
    readers: list[dict[str, Any]] = []
    seen: set[str] = set()
    for function in READERS:
        for statement in statements_of(template, function):
            key = json.dumps({k: v for k, v in statement.items() if k != "Sid"}, sort_keys=True)
            if key not in seen:  # the same grant in two readers: once
                seen.add(key)
                readers.append({**statement, "Sid": f"{function.removesuffix('Function')}{statement['Sid']}"})
    writer = statements_of(template, WRITER)
    resources: dict[str, Any] = {
        "ReadRole": {
            "Type": "AWS::IAM::Role",
            "Condition": "HoldsTheRoles",
            "Properties": {
                "RoleName": {"Fn::Sub": "${RoleNamePrefix}-read"},
                "Description": "Assumed by the central responder's readers: reads only",
                "MaxSessionDuration": 3600,
                "AssumeRolePolicyDocument": _trust(READERS),
                "Tags": [{"Key": "incident-responder:component", "Value": "responder"}],
            },
        },
        **_policies("ReadRole", readers),
        "RemediationRole": {
            "Type": "AWS::IAM::Role",
            "Condition": "HoldsTheRoles",
            "Properties": {
                "RoleName": {"Fn::Sub": "${RoleNamePrefix}-remediate"},
                "Description": "Assumed by the central responder's remediate function only: restores onboarded resources",
                "MaxSessionDuration": 3600,
                "AssumeRolePolicyDocument": _trust([WRITER]),
                "Tags": [{"Key": "incident-responder:component", "Value": "responder"}],
            },
        },
        **_policies("RemediationRole", writer),
        "ForwardAlarmsRole": {
            "Type": "AWS::IAM::Role",
            "Properties": {
                "Description": "EventBridge puts this account's alarm changes on the central event bus, nothing else",
                "AssumeRolePolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "events.amazonaws.com"},
                            "Action": "sts:AssumeRole",
                            "Condition": {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}},
                        }
                    ],
                },
                "Policies": [
                    {
                        "PolicyName": "PutOnTheCentralBusOnly",
                        "PolicyDocument": {
                            "Version": "2012-10-17",
                            "Statement": [
                                {"Effect": "Allow", "Action": "events:PutEvents", "Resource": {"Fn::Sub": CENTRAL_BUS}}
                            ],
                        },
                    }
                ],
                "Tags": [{"Key": "incident-responder:component", "Value": "responder"}],
            },
        },
        "ForwardAlarms": {
            "Type": "AWS::Events::Rule",
            "Properties": {
                "Description": "This account's alarms going to ALARM, to the central responder's event bus",
                "EventPattern": {
                    "source": ["aws.cloudwatch"],
                    "detail-type": ["CloudWatch Alarm State Change"],
                    "detail": {"state": {"value": ["ALARM"]}},
                },
                "State": "ENABLED",
                "Targets": [
                    {
                        "Id": "central-responder",
                        "Arn": {"Fn::Sub": CENTRAL_BUS},
                        "RoleArn": {"Fn::GetAtt": ["ForwardAlarmsRole", "Arn"]},
                    }
                ],
            },
        },
    }
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": (
            "Incident responder, member account: the roles the central deployment assumes here (read, and remediate "
            "onboarded resources) and the rule forwarding this account's alarms to it. Generated from template.yaml "
            "by scripts/member_template.py; edit that, not this."
        ),
        "Parameters": PARAMETERS,
        "Conditions": {"HoldsTheRoles": {"Fn::Equals": [{"Ref": "AWS::Region"}, {"Ref": "RolesRegion"}]}},
        "Resources": resources,
        "Outputs": {
            "ReadRoleArn": {"Condition": "HoldsTheRoles", "Value": {"Fn::GetAtt": ["ReadRole", "Arn"]}},
            "RemediationRoleArn": {"Condition": "HoldsTheRoles", "Value": {"Fn::GetAtt": ["RemediationRole", "Arn"]}},
        },
    }


CENTRAL_BUS = "arn:${AWS::Partition}:events:${CentralRegion}:${CentralAccountId}:event-bus/${CentralEventBusName}"
PARAMETERS: dict[str, Any] = {
    "CentralAccountId": {
        "Type": "String",
        "AllowedPattern": r"^\d{12}$",
        "Description": "The account of the central deployment (template.yaml)",
    },
    "CentralRegion": {
        "Type": "String",
        "AllowedPattern": r"^[a-z]{2}(-[a-z]+)+-\d$",
        "Description": "The Region of the central deployment",
    },
    "CentralStackName": {
        "Type": "String",
        "Default": "incident-responder",
        "AllowedPattern": r"^[A-Za-z][A-Za-z0-9-]{0,127}$",
        "Description": "The central stack's name: only its functions' roles may assume the roles here",
    },
    "CentralEventBusName": {
        "Type": "String",
        "Default": "incident-responder-alarms",
        "AllowedPattern": r"^[A-Za-z0-9._-]{1,256}$",
        "Description": "The central deployment's event bus that receives the member accounts' alarms",
    },
    "ExternalId": {
        "Type": "String",
        "NoEcho": True,
        "MinLength": 16,
        "MaxLength": 128,
        "AllowedPattern": r"^[\w+=,.@:/-]+$",
        "Description": "The external id the central deployment presents when it assumes the roles (sts:ExternalId)",
    },
    "RolesRegion": {
        "Type": "String",
        "AllowedPattern": r"^[a-z]{2}(-[a-z]+)+-\d$",
        "Description": (
            "The one Region whose stack instance creates the roles (IAM is global: a StackSet deploying to several "
            "Regions of an account creates them once); every instance forwards its Region's alarms"
        ),
    },
    "RoleNamePrefix": {
        "Type": "String",
        "Default": "incident-responder",
        "AllowedPattern": r"^[A-Za-z0-9+=,.@_-]{1,50}$",
        "Description": "The roles are <prefix>-read and <prefix>-remediate (what the central deployment assumes)",
    },
}


class _Dumper(yaml.SafeDumper):
    pass


def _text(template: dict[str, Any]) -> str:
    header = "# Generated from template.yaml by scripts/member_template.py: edit that, then run it again.\n"
    return header + yaml.dump(template, Dumper=_Dumper, sort_keys=False, width=120)


def main(argv: list[str]) -> int:
    text = _text(render(load_template()))
    if argv == ["--check"]:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT.name} is stale: run .venv/bin/python scripts/member_template.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
