"""``responder doctor``: whether this setup can work, one line per check, each failure with its fix.

Checks, in order (a later group is skipped when an earlier one leaves nothing to check with):

* **credentials and Region**: STS says who you are; a Region is set.
* **the model** (``--model``, else ``RESPONDER_MODEL``, else the default): for ``bedrock_converse:`` the foundation
  model exists and its lifecycle (GetFoundationModel ``modelLifecycle.status``) is ACTIVE; a model id that Bedrock
  invokes on demand only through an inference profile is named with the profile to use; an inference profile id is
  one Bedrock has here (GetInferenceProfile); and the model answers a minimal Converse call (a few tokens). The
  model's Region and credentials are its own where BEDROCK_REGION / BEDROCK_PROFILE say so, as the agents take them.
* **the stack** (``--stack NAME``): it exists and is complete, with every output the template declares; each
  onboarded function (the baseline table) still carries the onboarded tag; each has an alarm whose actions reach
  the incident topic; none of the stack's own roles and functions carries the onboarded tag; the approval and
  proposal topics have confirmed subscriptions (someone receives them).

Exit status 1 when a check fails. The same commands run against the lab (``responder lab up`` exports the
endpoint) as against an account. What an alarm notification would do once it arrives: ``responder check-alert``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from incident_responder.core.aws import AwsClients

PASS, FAIL, WARN, SKIP = "ok", "FAIL", "warn", "skip"


@dataclass
class Check:
    status: str
    name: str
    detail: str
    fix: str = ""

    def line(self) -> str:
        text = f"[{self.status:>4}] {self.name}: {self.detail}"
        return text + (f"\n       fix: {self.fix}" if self.fix else "")


def _error(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return f"{error.get('Code')}: {error.get('Message')}"
    return f"{type(exc).__name__}: {exc}"


# -- credentials ------------------------------------------------------------------------------------------
def check_credentials(clients: AwsClients) -> list[Check]:
    checks = []
    try:
        who = clients.get("sts").get_caller_identity()
        checks.append(Check(PASS, "credentials", f"{who['Arn']} (account {who['Account']})"))
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


# -- the model --------------------------------------------------------------------------------------------
def _bedrock_session():
    """The model's own session: BEDROCK_PROFILE and BEDROCK_REGION when set (as the agents take them)."""
    import boto3

    return boto3.Session(
        profile_name=os.environ.get("BEDROCK_PROFILE") or None,
        region_name=os.environ.get("BEDROCK_REGION") or None,
    )


def check_model(spec: str) -> list[Check]:
    from incident_responder.agent.errors import ModelConfigError, explain
    from incident_responder.agent.model_catalog import base_model_id, profile_prefix
    from incident_responder.agent.models import parse_spec

    try:
        provider, model_id = parse_spec(spec)
    except ModelConfigError as exc:
        return [Check(FAIL, "model", str(exc), "choose an active model")]
    if provider == "offline":
        return [Check(PASS, "model", "offline: the rule-based model, no endpoint and no cost")]
    if provider != "bedrock_converse":
        return [Check(SKIP, "model", f"{spec}: only Bedrock models are checked here")]
    try:
        session = _bedrock_session()
        region = session.region_name
    except BotoCoreError as exc:
        return [Check(FAIL, "model credentials", _error(exc), "fix BEDROCK_PROFILE or your AWS configuration")]
    if not region:
        return [Check(FAIL, "model", "no Region for Bedrock", "set BEDROCK_REGION or AWS_REGION")]
    checks: list[Check] = []
    control = session.client("bedrock")
    base, prefix = base_model_id(model_id), profile_prefix(model_id)
    try:
        details = control.get_foundation_model(modelIdentifier=base)["modelDetails"]
    except (BotoCoreError, ClientError) as exc:
        code = exc.response.get("Error", {}).get("Code") if isinstance(exc, ClientError) else None
        fix = (
            f"no such model in {region}: check the id (aws bedrock list-foundation-models --region {region})"
            if code in ("ResourceNotFoundException", "ValidationException")
            else "the credentials need bedrock:GetFoundationModel to check the model (the agents do not)"
        )
        checks.append(Check(FAIL if code == "ResourceNotFoundException" else WARN, "model exists", _error(exc), fix))
        details = None
    if details is not None:
        status = (details.get("modelLifecycle") or {}).get("status", "unknown")
        named = f"{details.get('modelName', base)} ({base}) in {region}"
        if status == "ACTIVE":
            checks.append(Check(PASS, "model lifecycle", f"{named}: ACTIVE"))
        elif status == "LEGACY":
            checks.append(
                Check(WARN, "model lifecycle", f"{named}: LEGACY", "move to an active model before its end of life")
            )
        else:
            checks.append(Check(FAIL, "model lifecycle", f"{named}: {status}", "choose an active model"))
        kinds = details.get("inferenceTypesSupported") or []
        if prefix is None and "ON_DEMAND" not in kinds:
            checks.append(
                Check(
                    FAIL,
                    "on demand",
                    f"{base} is invoked on demand only through an inference profile (supports {', '.join(kinds)})",
                    f"use its profile: --model bedrock_converse:global.{base} (or us./eu./apac. to keep one geography)",
                )
            )
    if prefix is not None:
        try:
            profile = control.get_inference_profile(inferenceProfileIdentifier=model_id)
            routes = sorted({m["modelArn"].split(":")[3] or "any commercial Region" for m in profile.get("models", [])})
            checks.append(
                Check(PASS, "inference profile", f"{model_id}: {profile.get('status')}, routes to {', '.join(routes)}")
            )
        except (BotoCoreError, ClientError) as exc:
            checks.append(
                Check(
                    FAIL,
                    "inference profile",
                    _error(exc),
                    f"this Region ({region}) offers no such profile: try another geography's prefix, or global.",
                )
            )
    runtime = session.client("bedrock-runtime")
    started = time.monotonic()
    try:
        answer = runtime.converse(
            modelId=model_id,
            messages=[{"role": "user", "content": [{"text": "Reply with the word OK."}]}],
            inferenceConfig={"maxTokens": 10, "temperature": 0},
        )
        usage = answer.get("usage", {})
        checks.append(
            Check(
                PASS,
                "model answers",
                f"{int((time.monotonic() - started) * 1000)} ms, {usage.get('inputTokens', 0)} tokens in, "
                f"{usage.get('outputTokens', 0)} out ({runtime.meta.endpoint_url})",
            )
        )
    except (BotoCoreError, ClientError) as exc:
        error = exc.response.get("Error", {}) if isinstance(exc, ClientError) else {}
        explained = explain(error.get("Code") or type(exc).__name__, error.get("Message") or str(exc))
        checks.append(Check(FAIL, "model answers", _error(exc), explained[1] if explained else ""))
    return checks


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
    if not functions:
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


def run_doctor(model: str | None, stack: str | None, clients: AwsClients | None = None) -> list[Check]:
    from incident_responder.agent.model_catalog import DEFAULT_MODEL

    clients = clients or AwsClients()
    checks = check_credentials(clients)
    if any(c.status == FAIL for c in checks):
        return checks
    checks += check_model(model or os.environ.get("RESPONDER_MODEL") or DEFAULT_MODEL)
    if stack:
        checks += check_stack(clients, stack)
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
    text, status = report(run_doctor(args.model, args.stack))
    print(text)
    return status
