"""``responder doctor --stack NAME --member ACCOUNT:REGION --member-profile PROFILE``: whether a member account can
work with the central deployment, seen from both sides.

* the central stack lists it (its ``/<stack>/members`` parameter: MemberAccounts, MemberRegions);
* member-account.yaml's roles exist there (``<prefix>-read`` and ``<prefix>-remediate``), trusting this account's
  stack with an external id, and the external id is the one the stack presents;
* a rule forwards its alarms to the central event bus (``<stack>-alarms``);
* each of its onboarded functions (the central baseline table, by ARN) still exists and carries the onboarded tag.

The member's side is read with ``PROFILE`` (credentials of that account): the roles trust only the central
functions, so the person running doctor reads them as the member account's own.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from incident_responder.cli.doctor_checks import FAIL, PASS, WARN, Check
from incident_responder.cli.doctor_checks import describe_error as _error
from incident_responder.core.aws import AwsClients
from incident_responder.core.members import Member, stack_member_config


def _trust(role: dict[str, Any]) -> dict[str, Any]:
    document = role.get("AssumeRolePolicyDocument") or {}
    return json.loads(unquote(document)) if isinstance(document, str) else document


def _role_check(
    iam: Any, name: str, central_account: str, stack: str, external_id: str | None, member: Member
) -> Check:
    try:
        role = iam.get_role(RoleName=name)["Role"]
    except (BotoCoreError, ClientError) as exc:
        return Check(FAIL, f"{member} {name}", _error(exc), "deploy member-account.yaml there (docs/deploy.md)")
    text = json.dumps(_trust(role))
    problems = []
    if f"iam::{central_account}:" not in text:
        problems.append(f"it does not trust account {central_account}")
    if f"role/{stack}-" not in text:
        problems.append(f"it trusts no role of stack {stack} (CentralStackName)")
    if "sts:ExternalId" not in text:
        problems.append("it requires no external id")
    elif external_id and external_id not in text:
        problems.append("its external id is not the one the stack presents (MemberExternalId)")
    if problems:
        return Check(FAIL, f"{member} {name}", "; ".join(problems), "update the member stack's parameters")
    return Check(PASS, f"{member} {name}", f"trusts {stack}'s functions in {central_account}, with the external id")


def check_members(
    central: AwsClients, stack: str, members: list[Member], member_profile: str | None = None
) -> list[Check]:
    from incident_responder.account.baseline import ONBOARDED_TAG

    try:
        config = stack_member_config(central, stack)
    except (BotoCoreError, ClientError, ValueError) as exc:
        return [Check(FAIL, "members", _error(exc), f"deploy this template version as {stack} (its members parameter)")]
    listed, external_id, prefix = config.members, config.external_id, config.role_prefix
    central_account = central.account_id()
    checks = []
    outputs = {
        o["OutputKey"]: o["OutputValue"]
        for o in central.get("cloudformation").describe_stacks(StackName=stack)["Stacks"][0].get("Outputs", [])
    }
    table = outputs.get("BaselineTableName")
    for member in members:
        if member not in listed:
            checks.append(
                Check(
                    FAIL,
                    f"{member} listed",
                    f"the stack lists {', '.join(map(str, sorted(listed))) or 'no member'}",
                    "add it to the stack's MemberAccounts and MemberRegions (sam deploy --parameter-overrides)",
                )
            )
        else:
            checks.append(Check(PASS, f"{member} listed", "the stack answers for it"))
        session = boto3.Session(profile_name=member_profile, region_name=member.region)
        theirs = AwsClients(session)
        try:
            said = theirs.account_id()
        except (BotoCoreError, ClientError) as exc:
            checks.append(Check(FAIL, f"{member} credentials", _error(exc), "--member-profile: a profile of it"))
            continue
        if said != member.account:
            checks.append(
                Check(FAIL, f"{member} credentials", f"the profile acts in {said}", "--member-profile: a profile of it")
            )
            continue
        iam = theirs.get("iam")
        for purpose in ("read", "remediate"):
            checks.append(_role_check(iam, f"{prefix}-{purpose}", central_account, stack, external_id, member))
        bus = f":event-bus/{stack}-alarms"
        rules = theirs.get("events").list_rules().get("Rules", [])
        forwarding = [
            r["Name"]
            for r in rules
            if any(t["Arn"].endswith(bus) for t in theirs.get("events").list_targets_by_rule(Rule=r["Name"])["Targets"])
        ]
        checks.append(
            Check(PASS, f"{member} alarms", f"{', '.join(forwarding)} forward them to {stack}-alarms")
            if forwarding
            else Check(
                WARN,
                f"{member} alarms",
                f"no rule in {member.region} forwards its alarms to {stack}-alarms",
                "deploy member-account.yaml in this Region too (its stack instance forwards the Region's alarms)",
            )
        )
        checks += _onboarded(central, theirs, table, member, ONBOARDED_TAG)
    return checks


def _onboarded(central: AwsClients, theirs: AwsClients, table: str | None, member: Member, tag: str) -> list[Check]:
    if not table:
        return []
    prefix = f"arn:aws:lambda:{member.region}:{member.account}:function:"
    pages = (
        central.get("dynamodb").get_paginator("scan").paginate(TableName=table, ProjectionExpression="function_name")
    )
    keys = sorted(i["function_name"]["S"] for p in pages for i in p.get("Items", []))
    functions = [k for k in keys if k.startswith(prefix)]
    if not functions:
        return [
            Check(
                WARN, f"{member} onboarded", "none of its functions", "responder onboard ARN --member-profile PROFILE"
            )
        ]
    checks = []
    for arn in functions:
        try:
            tags = theirs.get("lambda").list_tags(Resource=arn).get("Tags", {})
        except ClientError as exc:
            checks.append(Check(FAIL, arn, _error(exc), "it is gone: onboard what replaced it"))
            continue
        checks.append(
            Check(PASS, f"{arn} tag", f"{tag} is set")
            if tags.get(tag) == "true"
            else Check(FAIL, f"{arn} tag", f"{tag} is missing", f"responder onboard {arn} --member-profile PROFILE")
        )
    return checks
