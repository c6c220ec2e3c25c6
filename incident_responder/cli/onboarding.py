"""Before an incident: ``responder onboard`` (record a baseline), ``check-alert`` (what ingest would do with an
alert) and ``doctor`` (whether this setup can work)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any


def onboarding_clients(
    function: str, member_profile: str | None, stack: str = "incident-responder", home: Any = None
) -> Any:
    """The clients a function is onboarded with: yours; for a member account's function (its ARN, with
    ``member_profile``: credentials of that account), that account's for the reads and the onboarding tags, yours for
    the deployment's baseline table. A member the stack does not list (MemberAccounts, MemberRegions) is refused:
    its alarms would be refused too."""
    import boto3

    from incident_responder.core.aws import AwsClients
    from incident_responder.core.members import (
        Member,
        NotAMemberError,
        member_access,
        members_configured,
        stack_member_config,
        with_member_credentials,
    )

    home = home or AwsClients()
    if not member_profile:
        return home
    if not function.startswith("arn:"):
        raise NotAMemberError("--member-profile needs the function's ARN: it names the member account and Region")
    parts = function.split(":")
    member = Member(parts[4], parts[3])
    # The members this shell names itself (the lab, a self-hosted server), else the stack's own list.
    config = member_access(home) if members_configured() else stack_member_config(home, stack)
    listed = config.members
    if member not in listed:
        raise NotAMemberError(
            f"account {member.account}, Region {member.region} is not a member of this deployment (it lists "
            f"{', '.join(map(str, sorted(listed))) or 'none'}): add it to the stack's MemberAccounts and MemberRegions"
        )
    theirs = AwsClients(boto3.Session(profile_name=member_profile, region_name=member.region))
    if (said := theirs.account_id()) != member.account:
        raise NotAMemberError(f"profile {member_profile!r} acts in account {said}, not in {member.account}")
    return with_member_credentials(home, theirs, member)


def _cmd_onboard(args: argparse.Namespace) -> int:
    from incident_responder.account.baseline import record_baseline

    baseline = record_baseline(onboarding_clients(args.function, args.member_profile, args.stack), args.function)
    print(baseline.model_dump_json(indent=2))
    for entry in baseline.not_restorable:
        print(f"not restorable: {entry.path}: {entry.reason} (a person restores it)", file=sys.stderr)
    return 0


def _messages(name: str, text: str) -> list[tuple[str, Any]]:
    """The alerts in a file, each with where it came from: the file's own text, or each record's message when it
    holds the SNS event ingest is invoked with (events/ingest-*.json); an event ingest would refuse, refused."""
    import pydantic

    from incident_responder.intake.ingest import AlertCheck
    from incident_responder.intake.shapes import SnsEvent

    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None  # not JSON: check_alert says why, as ingest would of a message
    if not isinstance(data, dict) or "Records" not in data:
        return [(name, text)]
    try:
        records = SnsEvent.model_validate(data).Records
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        why = f"not the SNS event ingest is invoked with ({where}: {error['msg']}): ingest raises on it"
        return [(name, AlertCheck(outcome="reject", reason=why))]
    if not records:
        return [(name, AlertCheck(outcome="reject", reason="an SNS event with no records: no alert in it"))]
    if len(records) == 1:
        return [(name, records[0].Sns.Message)]
    return [(f"{name} (record {i})", record.Sns.Message) for i, record in enumerate(records, 1)]


def _cmd_check_alert(args: argparse.Namespace) -> int:
    from pathlib import Path

    from incident_responder.account.baseline import baseline_table_name
    from incident_responder.core.aws import AwsClients
    from incident_responder.intake.alerts import Home
    from incident_responder.intake.ingest import AlertCheck, check_alert

    clients = AwsClients()
    # The stack's account and Region: its topic's (or state machine's) ARN, else the caller's account here.
    stack_arn = os.environ.get("INCIDENT_TOPIC_ARN") or os.environ.get("STATE_MACHINE_ARN") or ""
    home = Home.of(stack_arn) or Home(clients.get("sts").get_caller_identity()["Account"], clients.region)
    checks = []
    table = baseline_table_name()
    for name in args.files:
        try:
            text = sys.stdin.read() if name == "-" else Path(name).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else f"not UTF-8 text ({exc.reason} at byte {exc.start})"
            checked = AlertCheck(outcome="reject", reason=f"cannot read the file: {why or exc}")
        else:
            for where, message in _messages(name, text):
                checked = message if isinstance(message, AlertCheck) else check_alert(clients, message, table, home)
                checks.append({"file": where, **checked.model_dump()})
            continue
        checks.append({"file": name, **checked.model_dump()})
    if args.json:
        print(json.dumps(checks, indent=2))
    else:
        for check in checks:
            target = ":".join(filter(None, (check["function"], check["qualifier"])))
            print(f"{check['file']}: {check['outcome']}{' ' + target if target else ''}\n  {check['reason']}")
    return 1 if any(check["outcome"] == "reject" for check in checks) else 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    from incident_responder.cli.doctor import main

    return main(args)


def add_commands(sub: Any) -> None:
    """``onboard``, ``check-alert`` and ``doctor``, on ``responder``'s subcommands."""
    p = sub.add_parser("onboard", help="record a function's known-good configuration as its baseline")
    p.add_argument(
        "function", help="its name, or its ARN (in the account and Region your credentials reach: nothing else is read)"
    )
    p.add_argument(
        "--member-profile",
        metavar="PROFILE",
        help="a member account's function (give its ARN): an AWS profile of that account, which reads it and tags "
        "what may be restored; the baseline goes to this deployment's table with your own credentials",
    )
    p.add_argument(
        "--stack",
        default="incident-responder",
        help="with --member-profile: the central stack, whose member list must name the function's account and "
        "Region (default: incident-responder)",
    )
    p.set_defaults(handler=_cmd_onboard)

    p = sub.add_parser(
        "check-alert",
        help="what ingest would do with each alarm notification (start, ignore or reject, with the reason); "
        "starts and writes nothing",
        description="Reads each file as ingest reads an SNS message (a CloudWatch alarm notification in any of its "
        "shapes, an EventBridge alarm event, or a project alert; or the SNS event ingest is invoked with, record by "
        "record, as in events/ingest-*.json) and says what ingest would do: start (the function "
        "and alias or version it resolves to), ignore or reject, each with its reason. It reads the account boto3 "
        "reaches (BASELINE_TABLE, the stack's output: onboarded functions, queue consumers; DescribeAlarms for a "
        "composite's children) and changes nothing. The stack's account and Region come from INCIDENT_TOPIC_ARN "
        "(else your credentials' account and Region). Exit status: 0 when none is rejected, 1 otherwise.",
    )
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="a notification's JSON (the SNS Message) or SNS's Lambda event, or - for standard input",
    )
    p.add_argument("--json", action="store_true", help="print a list of {file, outcome, function, qualifier, reason}")
    p.set_defaults(handler=_cmd_check_alert)

    p = sub.add_parser(
        "doctor",
        help="whether this setup can work: credentials, the model, and a deployed stack; a line per check with its fix",
        description="Checks your credentials and Region; the model (it exists, its lifecycle is ACTIVE, it is "
        "invoked as named or needs an inference profile, it answers a minimal call); and with --stack, the deployed "
        "stack (outputs, onboarded functions' tags, their alarms reaching the incident topic, confirmed subscriptions "
        "on the approval and proposal topics). Exit status: 1 when a check fails.",
    )
    p.add_argument("--model", help="the model to check (default: $RESPONDER_MODEL, else the template's default)")
    p.add_argument("--stack", help="a deployed stack's name, to check it too")
    p.add_argument(
        "--member",
        action="append",
        default=[],
        metavar="ACCOUNT:REGION",
        help="with --stack: a member account and Region to check too (listed by the stack, its roles trusting the "
        "stack, its alarms forwarded, its onboarded functions tagged); repeatable",
    )
    p.add_argument("--member-profile", metavar="PROFILE", help="with --member: an AWS profile of that account")
    p.set_defaults(handler=_cmd_doctor)
