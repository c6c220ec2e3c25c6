"""``responder doctor``'s checks of a Bedrock model: it exists and is active, it is invoked as named or through an
inference profile (and which Regions that profile may reach from here), and it answers a minimal Converse call; a
refusal is named (a first use's AWS Marketplace subscription or use-case form, an organisation's SCP) with its fix.
The model's Region and credentials are its own where BEDROCK_REGION / BEDROCK_PROFILE say so, as the agents take them.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from incident_responder.agent.errors import access_failure, explain
from incident_responder.agent.model_catalog import (
    base_model_id,
    geographic_profile,
    geography_of_region,
    profile_prefix,
    profile_reach,
)
from incident_responder.cli.doctor_checks import FAIL, PASS, WARN, Check, describe_error

# The Region of the foundation model an AccessDenied names: where the profile routed the call (empty for global).
_DENIED_IN = re.compile(r"arn:aws[a-z-]*:bedrock:([a-z0-9-]*)::foundation-model/")


def bedrock_session() -> Any:
    """The model's own session: BEDROCK_PROFILE and BEDROCK_REGION when set (as the agents take them), else the
    Region AWS_REGION names, as the AWS CLI and the Lambda runtime read it."""
    from incident_responder.core.aws import new_session

    region = os.environ.get("BEDROCK_REGION") or os.environ.get("AWS_REGION") or None
    return new_session(profile_name=os.environ.get("BEDROCK_PROFILE") or None, region_name=region)


def _code(exc: Exception) -> str | None:
    return exc.response.get("Error", {}).get("Code") if isinstance(exc, ClientError) else None


def check_bedrock(model_id: str) -> list[Check]:
    try:
        session = bedrock_session()
        region = session.region_name
    except BotoCoreError as exc:
        return [Check(FAIL, "model credentials", describe_error(exc), "fix BEDROCK_PROFILE or your AWS configuration")]
    if not region:
        return [Check(FAIL, "model", "no Region for Bedrock", "set BEDROCK_REGION or AWS_REGION")]
    control = session.client("bedrock")
    checks = _check_foundation_model(control, model_id, region)
    if profile_prefix(model_id) is not None:
        checks.append(_check_profile(control, model_id, region))
    return checks + _check_answers(session.client("bedrock-runtime"), model_id, region)


def _check_foundation_model(control: Any, model_id: str, region: str) -> list[Check]:
    base = base_model_id(model_id)
    try:
        details = control.get_foundation_model(modelIdentifier=base)["modelDetails"]
    except (BotoCoreError, ClientError) as exc:
        code = _code(exc)
        fix = (
            f"no such model in {region}: check the id (aws bedrock list-foundation-models --region {region})"
            if code in ("ResourceNotFoundException", "ValidationException")
            else "the credentials need bedrock:GetFoundationModel to check the model (the agents do not)"
        )
        return [Check(FAIL if code == "ResourceNotFoundException" else WARN, "model exists", describe_error(exc), fix)]
    checks = []
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
    if profile_prefix(model_id) is None and "ON_DEMAND" not in kinds:
        geography = geography_of_region(region)
        local = (
            f", or bedrock_converse:{geographic_profile(base, geography)} to stay in one geography" if geography else ""
        )
        checks.append(
            Check(
                FAIL,
                "on demand",
                f"{base} is invoked on demand only through an inference profile (supports {', '.join(kinds)})",
                f"use its profile: --model bedrock_converse:global.{base}{local}",
            )
        )
    return checks


def _check_profile(control: Any, model_id: str, region: str) -> Check:
    """The profile exists here, and the Regions Bedrock says it may route a call from this Region to."""
    try:
        profile = control.get_inference_profile(inferenceProfileIdentifier=model_id)
    except (BotoCoreError, ClientError) as exc:
        if _code(exc) in ("ResourceNotFoundException", "ValidationException"):
            return Check(
                FAIL,
                "inference profile",
                describe_error(exc),
                f"this Region ({region}) offers no such profile: try another geography's prefix, or global.",
            )
        return Check(
            WARN,
            "inference profile",
            f"{describe_error(exc)}; {model_id} may reach {profile_reach(model_id)}",
            "the credentials need bedrock:GetInferenceProfile to list its Regions (the agents do not)",
        )
    arns = [str(m.get("modelArn", "")) for m in profile.get("models", [])]
    regions = ", ".join(sorted({arn.split(":")[3] for arn in arns if arn.count(":") >= 3} - {""}))
    reach = f"{regions} ({profile_reach(model_id)})" if regions else profile_reach(model_id)
    return Check(PASS, "inference profile", f"{model_id}: {profile.get('status')}; from {region} it may reach {reach}")


def _check_answers(runtime: Any, model_id: str, region: str) -> list[Check]:
    started = time.monotonic()
    try:
        answer = runtime.converse(
            modelId=model_id,
            messages=[{"role": "user", "content": [{"text": "Reply with the word OK."}]}],
            inferenceConfig={"maxTokens": 10, "temperature": 0},
        )
    except (BotoCoreError, ClientError) as exc:
        error = exc.response.get("Error", {}) if isinstance(exc, ClientError) else {}
        message = error.get("Message") or str(exc)
        explained = explain(error.get("Code") or type(exc).__name__, message)
        named = access_failure(message)
        checks = [
            Check(
                FAIL,
                "model answers",
                f"{named}: {describe_error(exc)}" if named else describe_error(exc),
                explained[1] if explained else "",
            )
        ]
        if scp := _scp_warning(model_id, region, message):
            checks.append(scp)
        return checks
    usage = answer.get("usage", {})
    took = int((time.monotonic() - started) * 1000)
    return [
        Check(
            PASS,
            "model answers",
            f"{took} ms, {usage.get('inputTokens', 0)} tokens in, {usage.get('outputTokens', 0)} out "
            f"({runtime.meta.endpoint_url})",
        )
    ]


def _scp_warning(model_id: str, region: str, message: str) -> Check | None:
    """An AccessDenied an organisation's SCP gave, or looks given: it names one, or it refused the model in a Region
    other than the one called (where a cross-Region profile sent it) without blaming an identity policy."""
    lowered = message.lower()
    denied = _DENIED_IN.search(message)
    elsewhere = denied is not None and denied.group(1) != region and "identity-based policy" not in lowered
    if "service control policy" not in lowered and not (elsewhere and "not authorized" in lowered):
        return None
    where = (denied.group(1) if denied else "") or "the Region the profile chose"
    geography = geography_of_region(region)
    if profile_prefix(model_id) == "global" and geography:
        fix = (
            f"use the geographic profile, if your organization allows its Regions: --model bedrock_converse:"
            f"{geographic_profile(model_id, geography)} (ResponderModel when deployed), or have the SCP allow "
            "Bedrock inference in every Region the profile may reach"
        )
    else:
        fix = "have the SCP allow Bedrock inference in every Region the profile may reach, or choose one inside them"
    return Check(
        WARN,
        "organization policy",
        f"the call was denied in {where}: {model_id} may reach {profile_reach(model_id)}, and an SCP that denies "
        "any of them fails the call",
        fix,
    )
