"""``responder doctor``: whether this setup can work, one line per check, each failure with its fix.

Checks, in order (a later group is skipped when an earlier one leaves nothing to check with):

* **credentials and Region**: STS says who you are; a Region is set.
* **the model** (``--model``, else ``RESPONDER_MODEL``, else the default): for ``bedrock_converse:``
  (:mod:`~incident_responder.cli.doctor_bedrock`) the foundation model exists and is ACTIVE, it is invoked as named
  or through an inference profile, the Regions that profile may reach from here, and a minimal Converse call; a
  refusal is named with its fix (a first use's AWS Marketplace subscription or Anthropic use-case form, an
  organisation's SCP). For ``openai:`` and ``ollama:`` (:mod:`~incident_responder.cli.doctor_endpoints`) the
  endpoint answers, the key is accepted, the model is served, and an OpenAI-compatible one answers a minimal call.
* **the account's concurrency**, before a deployment (no ``--stack``): reserving ``ResponderReservedConcurrency``
  for each of the responder's functions leaves Lambda the 100 unreserved it keeps, or CloudFormation refuses the
  stack.
* **the stack** (``--stack NAME``): it exists and is complete, with every output the template declares; each
  onboarded function (the baseline table) still carries the onboarded tag; each has an alarm whose actions reach
  the incident topic; none of the stack's own roles and functions carries the onboarded tag; the approval and
  proposal topics have confirmed subscriptions (someone receives them).

Exit status 1 when a check fails. The same commands run against the lab (``responder lab up`` exports the
endpoint) as against an account. What an alarm notification would do once it arrives: ``responder check-alert``.
"""

from __future__ import annotations

import os
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

from incident_responder.cli.doctor_checks import FAIL, PASS, SKIP, WARN, Check
from incident_responder.cli.doctor_checks import describe_error as _error
from incident_responder.core.aws import AwsClients

__all__ = ["FAIL", "PASS", "SKIP", "WARN", "Check", "check_model", "report", "run_doctor"]


# -- credentials ------------------------------------------------------------------------------------------
def check_credentials(clients: AwsClients) -> list[Check]:
    checks = []
    try:
        who = clients.get("sts").get_caller_identity()
        checks.append(Check(PASS, "credentials", f"{who['Arn']} (account {who['Account']})"))
    except EndpointConnectionError as exc:  # credentials may be fine: STS is out of reach
        checks.append(Check(FAIL, "credentials", _error(exc), "check the network, a proxy (HTTPS_PROXY) or the Region"))
    except (BotoCoreError, ClientError) as exc:
        checks.append(
            Check(FAIL, "credentials", _error(exc), "configure a profile (AWS_PROFILE, aws sso login) or access keys")
        )
    region = clients.region
    checks.append(
        Check(PASS, "region", region)
        if region
        else Check(FAIL, "region", "none set", "set AWS_REGION (or a region in your profile)")
    )
    return checks


# -- the account's concurrency ---------------------------------------------------------------------------------
# template.yaml's defaults, kept equal by a test: its functions and ResponderReservedConcurrency.
RESPONDER_FUNCTIONS = 13
RESERVED_PER_FUNCTION = 10
LAMBDA_KEEPS_UNRESERVED = 100  # Lambda refuses a reservation that leaves less of the account's quota unreserved


def check_concurrency(clients: AwsClients, per_function: int = RESERVED_PER_FUNCTION) -> Check:
    """Before a deployment: the account can spare the concurrency the stack reserves for its functions."""
    try:
        settings = clients.get("lambda").get_account_settings()["AccountLimit"]
    except (BotoCoreError, ClientError) as exc:
        return Check(WARN, "concurrency", f"could not read the account's Lambda settings: {_error(exc)}")
    unreserved, need = settings["UnreservedConcurrentExecutions"], RESPONDER_FUNCTIONS * per_function
    left = unreserved - need
    said = f"{unreserved} of the account's {settings['ConcurrentExecutions']} unreserved; the stack reserves {need}"
    if left >= LAMBDA_KEEPS_UNRESERVED:
        return Check(PASS, "concurrency", said)
    return Check(
        FAIL,
        "concurrency",
        f"{said}, leaving {left} where Lambda keeps {LAMBDA_KEEPS_UNRESERVED}: CloudFormation would refuse the stack",
        "ask for a higher quota (Service Quotas: AWS Lambda, Concurrent executions), or deploy with a lower "
        "ResponderReservedConcurrency (none reserves none)",
    )


# -- the model --------------------------------------------------------------------------------------------
def check_model(spec: str) -> list[Check]:
    from incident_responder.agent.errors import ModelConfigError
    from incident_responder.agent.models import parse_spec

    try:
        provider, model_id = parse_spec(spec)
    except ModelConfigError as exc:
        return [Check(FAIL, "model", str(exc), "choose an active model")]
    if provider == "offline":
        return [Check(PASS, "model", "offline: the rule-based model, no endpoint and no cost")]
    if provider == "bedrock_converse":
        from incident_responder.cli.doctor_bedrock import check_bedrock

        return check_bedrock(model_id)
    from incident_responder.cli.doctor_endpoints import check_ollama, check_openai

    return check_openai(model_id) if provider == "openai" else check_ollama(model_id)


# -- the stack --------------------------------------------------------------------------------------------
def _template_outputs() -> list[str]:
    from pathlib import Path

    import yaml

    template = Path(__file__).resolve().parents[2] / "template.yaml"
    if not template.exists():
        return []

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    return list((yaml.load(template.read_text(), Loader=Loader) or {}).get("Outputs", {}))


def check_stack(clients: AwsClients, stack_name: str) -> list[Check]:
    from incident_responder.account.baseline import ONBOARDED_TAG

    try:
        (stack,) = clients.get("cloudformation").describe_stacks(StackName=stack_name)["Stacks"]
    except (BotoCoreError, ClientError) as exc:
        return [Check(FAIL, "stack", _error(exc), "deploy it (sam deploy), or name the right one: --stack NAME")]
    status = stack["StackStatus"]
    good = status in ("CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE")
    checks = [
        Check(
            PASS if good else FAIL, "stack", f"{stack_name}: {status}", "" if good else "see its events in the console"
        )
    ]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    missing = [name for name in _template_outputs() if name not in outputs]
    checks.append(
        Check(FAIL, "outputs", f"missing {', '.join(missing)}", "redeploy this version of the template")
        if missing
        else Check(PASS, "outputs", f"{len(outputs)} outputs")
    )
    table, topic = outputs.get("BaselineTableName"), outputs.get("IncidentTopicArn")
    functions: list[str] = []
    if table:
        pages = (
            clients.get("dynamodb")
            .get_paginator("scan")
            .paginate(TableName=table, ProjectionExpression="function_name")
        )
        functions = sorted(item["function_name"]["S"] for page in pages for item in page.get("Items", []))
    # A member account's functions (keyed by ARN) are checked from that account: --member ACCOUNT:REGION.
    members = [f for f in functions if f.startswith("arn:")]
    functions = [f for f in functions if not f.startswith("arn:")]
    if members:
        checks.append(Check(PASS, "member functions", f"{len(members)} onboarded: --member ACCOUNT:REGION checks them"))
    if not functions and not members:
        checks.append(Check(FAIL, "onboarded", "no function is onboarded", "responder onboard FUNCTION"))
    lam = clients.get("lambda")
    alarms = _alarms_by_function(clients)
    for function in functions:
        try:
            arn = lam.get_function_configuration(FunctionName=function)["FunctionArn"]
            tags = lam.list_tags(Resource=arn).get("Tags", {})
        except ClientError as exc:
            checks.append(Check(FAIL, f"{function}", _error(exc), "it is gone: onboard what replaced it"))
            continue
        checks.append(
            Check(PASS, f"{function} tag", f"{ONBOARDED_TAG} is set")
            if tags.get(ONBOARDED_TAG) == "true"
            else Check(
                FAIL,
                f"{function} tag",
                f"{ONBOARDED_TAG} is missing: the remediate role may not change it",
                f"responder onboard {function}",
            )
        )
        reaching = [name for name, actions in alarms.get(function, []) if topic in actions]
        checks.append(
            Check(PASS, f"{function} alarms", f"{', '.join(reaching)} notify the incident topic")
            if reaching
            else Check(
                FAIL,
                f"{function} alarms",
                f"{len(alarms.get(function, []))} alarm(s) on it, none notifies the incident topic",
                f"add {topic} to its Errors alarm's AlarmActions",
            )
        )
    checks.append(_check_own_resources_out_of_scope(clients, stack_name))
    sns = clients.get("sns")
    # Nobody on the approval topic: every approval expires. Nobody on the proposal topic: news goes unread.
    for output, who, unconfirmed in (
        ("ApprovalTopicArn", "approval requests", FAIL),
        ("IncidentNewsTopicArn", "incident news", WARN),
    ):
        arn = outputs.get(output)
        if not arn:
            continue
        subscriptions = sns.list_subscriptions_by_topic(TopicArn=arn).get("Subscriptions", [])
        confirmed = [s for s in subscriptions if s["SubscriptionArn"].startswith("arn:")]
        pending = len(subscriptions) - len(confirmed)
        checks.append(
            Check(
                PASS,
                output,
                f"{len(confirmed)} confirmed subscription(s)" + (f", {pending} pending" if pending else ""),
            )
            if confirmed
            else Check(
                unconfirmed,
                output,
                f"no confirmed subscription ({pending} pending): nobody receives the {who}",
                "confirm the email SNS sent, or subscribe someone (ApprovalEmail, or aws sns subscribe)",
            )
        )
    return checks


def _check_own_resources_out_of_scope(clients: AwsClients, stack_name: str) -> Check:
    """None of the stack's own roles or functions may carry the onboarded tag: whoever tagged them meant to put
    the responder in its own remediation scope (the remediate role's explicit denies refuse it anyway)."""
    from incident_responder.account.baseline import ONBOARDED_TAG

    tagged, looked = [], 0
    try:
        pages = clients.get("cloudformation").get_paginator("list_stack_resources").paginate(StackName=stack_name)
        for summary in (r for page in pages for r in page["StackResourceSummaries"]):
            physical, kind = summary.get("PhysicalResourceId"), summary["ResourceType"]
            if not physical or kind not in ("AWS::IAM::Role", "AWS::Lambda::Function"):
                continue
            looked += 1
            if kind == "AWS::IAM::Role":
                tags = {t["Key"]: t["Value"] for t in clients.get("iam").list_role_tags(RoleName=physical)["Tags"]}
            else:
                tags = clients.get("lambda").get_function(FunctionName=physical).get("Tags", {})
            if ONBOARDED_TAG in tags:
                tagged.append(physical)
    except (BotoCoreError, ClientError) as exc:
        return Check(WARN, "responder out of scope", f"could not read the stack's roles and functions: {_error(exc)}")
    if tagged:
        return Check(
            FAIL,
            "responder out of scope",
            f"{', '.join(tagged)} of the stack carry {ONBOARDED_TAG}: someone put the responder in its own scope",
            "remove the tag, and limit who may set it (README, 'Who may set the onboarding tag')",
        )
    return Check(PASS, "responder out of scope", f"none of the stack's {looked} roles and functions is onboarded")


def _alarms_by_function(clients: AwsClients) -> dict[str, list[tuple[str, list[str]]]]:
    """Each function's metric alarms (by their FunctionName dimension, or a metric query's), with their actions."""
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for page in clients.get("cloudwatch").get_paginator("describe_alarms").paginate(AlarmTypes=["MetricAlarm"]):
        for alarm in page.get("MetricAlarms", []):
            dimensions = list(alarm.get("Dimensions", []))
            for query in alarm.get("Metrics", []):
                dimensions += query.get("MetricStat", {}).get("Metric", {}).get("Dimensions", [])
            for dimension in dimensions:
                if dimension["Name"] == "FunctionName":
                    found.setdefault(dimension["Value"], []).append((alarm["AlarmName"], alarm.get("AlarmActions", [])))
    return found


def run_doctor(
    model: str | None,
    stack: str | None,
    clients: AwsClients | None = None,
    members: list[str] | None = None,
    member_profile: str | None = None,
) -> list[Check]:
    from incident_responder.agent.model_catalog import DEFAULT_MODEL

    clients = clients or AwsClients()
    checks = check_credentials(clients)
    if any(c.status == FAIL for c in checks):
        return checks + [Check(SKIP, "model", "not checked: it needs working credentials and a Region")]
    checks += check_model(model or os.environ.get("RESPONDER_MODEL") or DEFAULT_MODEL)
    if stack:
        checks += check_stack(clients, stack)
        if members:
            from incident_responder.cli.doctor_members import check_members
            from incident_responder.core.members import parse_members

            checks += check_members(clients, stack, sorted(parse_members(",".join(members))), member_profile)
    else:  # a deployed stack already reserves its share: this is about the one to come
        checks.append(check_concurrency(clients))
    return checks


def report(checks: list[Check]) -> tuple[str, int]:
    """The lines a person reads, and the exit status."""
    failed = [c for c in checks if c.status == FAIL]
    lines = [c.line() for c in checks]
    lines.append(f"{len(failed)} check(s) failed." if failed else "All checks passed.")
    lines.append(
        "Next: responder check-alert NOTIFICATION.json says what ingest would do with an alarm's notification."
    )
    return "\n".join(lines), 1 if failed else 0


def main(args: Any) -> int:
    members, profile = getattr(args, "member", None), getattr(args, "member_profile", None)
    text, status = report(run_doctor(args.model, args.stack, members=members, member_profile=profile))
    print(text)
    return status
