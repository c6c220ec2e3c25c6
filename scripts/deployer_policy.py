"""`make deployer-policy`: write docs/deployer-policies/*.json, what the principal running `sam deploy` (and
`sam delete`) needs, from the template's own resource types.

For each resource type the translated template creates (every optional resource included), the permissions
CloudFormation's handlers for that type need to create, read, update and delete it, as the type's registry schema
lists them (the schemas cfn-lint ships, the ones CloudFormation publishes); then what `sam deploy` itself does
(change sets under the SAM transform, its managed artifacts bucket). IAM roles and the passing of roles are
limited to the roles CloudFormation names after the stack (`<stack>-...`): that is what keeps the deployer from
granting itself anything else. Everything else is `*`: CloudFormation names the stack's other resources itself.
A handler's permissions for features the template does not use (:data:`UNUSED`) are left out. The actions are
packed, by service, into managed policies of at most 6,144 characters each (IAM's quota, whitespace not counted).

make deployer-policy                                  # writes the policies
.venv/bin/python scripts/deployer_policy.py --check   # exits 1 when the committed policies are not what it would write
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
POLICIES = REPO / "docs" / "deployer-policies"
MANAGED_POLICY_CHARACTERS = 6144  # IAM quota for a managed policy, not counting whitespace
COMMAND = "make deployer-policy"
STACK = "incident-responder"  # samconfig.toml's stack name: change the role ARNs if you deploy under another
HANDLERS = ("create", "read", "update", "delete")
# Services a handler names for features this template leaves unused, and the template property that would use each
# (tests/validation/test_deployer_policy.py checks the template still has none of them).
UNUSED = {
    "codedeploy": "DeploymentPreference",  # gradual alias shifting
    "ec2": "VpcConfig",  # the responder's functions run outside any VPC
    "elasticfilesystem": "FileSystemConfigs",
    "s3files": "FileSystemConfigs",
    "kinesis": "KinesisFirehoseDestination",  # log delivery to a stream
    "firehose": "KinesisFirehoseDestination",
    "s3tables": "MetadataTableConfiguration",  # S3 metadata tables
}

# What `sam deploy --guided` and `sam delete` do besides the stack's own resources: a change set with the SAM
# transform, the events it prints, and the artifacts bucket of SAM's own managed stack.
SAM_CLI = [
    "cloudformation:CreateChangeSet",
    "cloudformation:DeleteChangeSet",
    "cloudformation:DeleteStack",
    "cloudformation:DescribeChangeSet",
    "cloudformation:DescribeStackEvents",
    "cloudformation:DescribeStackResource",
    "cloudformation:DescribeStackResources",
    "cloudformation:DescribeStacks",
    "cloudformation:ExecuteChangeSet",
    "cloudformation:GetTemplate",
    "cloudformation:GetTemplateSummary",
    "cloudformation:ListStackResources",
    "cloudformation:ValidateTemplate",
    "s3:CreateBucket",
    "s3:GetBucketLocation",
    "s3:GetObject",
    "s3:ListBucket",
    "s3:PutBucketPolicy",
    "s3:PutBucketTagging",
    "s3:PutBucketVersioning",
    "s3:PutEncryptionConfiguration",
    "s3:PutBucketPublicAccessBlock",
    "s3:PutObject",
    "sts:GetCallerIdentity",
]


def schema_dir() -> Path:
    """cfn-lint's copy of the CloudFormation registry schemas (the project's dev environment installs cfn-lint)."""
    import cfnlint

    return Path(cfnlint.__file__).parent / "data" / "schemas"


@cache
def schemas() -> dict[str, dict[str, Any]]:
    """Every resource type's registry schema, by type name."""
    index = json.loads((schema_dir() / "providers" / "us-east-1.json").read_text())
    return {name: json.loads((schema_dir() / "resources" / f"{key}.json").read_text()) for name, key in index.items()}


def resource_types() -> list[str]:
    """Every resource type the template creates, with every optional part (conditions left unresolved)."""
    from incident_responder.lab.template import load_template, translate

    translated = translate(load_template(), REPO, "us-east-1")
    return sorted({r["Type"] for r in translated["Resources"].values()})


def handler_permissions(type_name: str) -> set[str]:
    handlers = schemas()[type_name].get("handlers", {})
    return {p for h in HANDLERS for p in handlers.get(h, {}).get("permissions", [])}


# An IAM action is service:Name; a schema lists the odd entry that is not one (s3:REST.PUT.OBJECT, an S3 log term).
IAM_ACTION = re.compile(r"^[a-z0-9-]+:[A-Za-z0-9]+$")


def actions() -> list[str]:
    needed = set(SAM_CLI)
    for type_name in resource_types():
        needed |= handler_permissions(type_name)
    return sorted(a for a in needed if IAM_ACTION.match(a) and a.split(":")[0] not in UNUSED)


def statements() -> list[dict[str, Any]]:
    """One statement per service; IAM's on the stack's own roles only (service-linked roles on their own path)."""
    by_service: dict[str, list[str]] = {}
    for action in actions():
        by_service.setdefault(action.split(":")[0], []).append(action)
    out = []
    for service, listed in sorted(by_service.items()):
        if service != "iam":
            out.append({"Sid": service.capitalize(), "Effect": "Allow", "Action": listed, "Resource": "*"})
            continue
        roles = [a for a in listed if a != "iam:CreateServiceLinkedRole"]
        out.append({"Sid": "IamTheStacksOwnRoles", "Effect": "Allow", "Action": roles, "Resource": ROLES})
        if "iam:CreateServiceLinkedRole" in listed:
            linked = "arn:aws:iam::*:role/aws-service-role/*"
            out.append(
                {
                    "Sid": "IamServiceLinkedRoles",
                    "Effect": "Allow",
                    "Action": "iam:CreateServiceLinkedRole",
                    "Resource": linked,
                }
            )
    return out


ROLES = f"arn:aws:iam::*:role/{STACK}-*"


def size(document: dict[str, Any]) -> int:
    """Characters IAM counts against its quota: the document without whitespace."""
    return len(json.dumps(document, separators=(",", ":")))


def policies() -> list[dict[str, Any]]:
    """The statements packed, in order, into as few managed policies as IAM's size quota allows."""
    packed: list[dict[str, Any]] = []
    for statement in statements():
        if (
            packed
            and size({**packed[-1], "Statement": [*packed[-1]["Statement"], statement]}) <= MANAGED_POLICY_CHARACTERS
        ):
            packed[-1]["Statement"].append(statement)
        else:
            packed.append({"Version": "2012-10-17", "Statement": [statement]})
    return packed


def rendered() -> dict[str, str]:
    return {f"deploy-{i}.json": json.dumps(p, indent=2) + "\n" for i, p in enumerate(policies(), 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed policies are stale")
    args = parser.parse_args(argv)
    files = rendered()
    committed = {p.name: p.read_text() for p in POLICIES.glob("*.json")} if POLICIES.is_dir() else {}
    if args.check:
        if committed != files:
            print(f"{POLICIES.relative_to(REPO)} is stale: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    POLICIES.mkdir(exist_ok=True)
    for stale in set(committed) - set(files):
        (POLICIES / stale).unlink()
    for name, text in files.items():
        (POLICIES / name).write_text(text)
    print(f"wrote {len(files)} policies to {POLICIES.relative_to(REPO)}: {len(actions())} actions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
