"""INVESTIGATING: get_recent_changes, who changed the function or what it depends on, and its versions."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import Field

from incident_responder.account.compact import Compact
from incident_responder.account.environment import SECRET_ARN_IN_TEXT
from incident_responder.account.errors import AWS_ERRORS, describe_error
from incident_responder.account.names import function_name_of
from incident_responder.account.readings import _aws_time
from incident_responder.core.aws import AwsClients
from incident_responder.core.encoding import iso

# == get_recent_changes ============================================================================================
MAX_CHANGES = 20
MAX_TRAIL_LOOKUPS = 6  # CloudTrail allows LookupEvents 2 a second per account and region
TRAIL_PAGE = 50
MAX_VERSIONS = 5
MAX_ALIASES = 10
MAX_VERSION_PAGES = 20
_LAMBDA_EVENT_VERSION = re.compile(r"^([A-Za-z]+?)20\d{6}(?:v\d+)?$")


class ChangeEvent(Compact):
    time: str = Field(description="ISO 8601 UTC")
    event_name: str = Field(description="the API call (Lambda's without CloudTrail's API-version suffix)")
    event_source: str | None = Field(default=None, description="e.g. lambda.amazonaws.com, iam.amazonaws.com")
    resource: str = Field(description="the function's resource it changed, as looked up (name, role, key ARN, ...)")
    who: str | None = Field(default=None, description="the caller's ARN (userIdentity.arn), else its user name")
    error_code: str | None = Field(default=None, description="set when the call failed (nothing changed)")
    error_message: str | None = Field(
        default=None, description="the failed call's error message, without what it quotes of the request"
    )


class VersionInfo(Compact):
    version: str
    last_modified: str | None = None
    code_sha256: str | None = None
    description: str | None = None


class AliasInfo(Compact):
    name: str
    function_version: str
    routing: dict[str, float] | None = Field(
        default=None, description="AdditionalVersionWeights: version -> share of traffic (unset: none)"
    )


class FunctionHistory(Compact):
    last_modified: str | None = Field(default=None, description="the function's ($LATEST) LastModified")
    versions: list[VersionInfo] = Field(
        default_factory=list, description=f"published versions, newest first, at most {MAX_VERSIONS}"
    )
    omitted_versions: int = Field(default=0, description="older versions not shown")
    aliases: list[AliasInfo] = Field(default_factory=list)
    omitted_aliases: int = 0


class RecentChanges(Compact):
    ALWAYS = frozenset({"events"})  # no change at all is a finding

    function_name: str
    window_hours: int
    events: list[ChangeEvent] = Field(
        default_factory=list,
        description=f"CloudTrail management writes on the function, its role, its environment's KMS key, its event "
        f"source mappings and their queues, and the secrets its environment names; newest first, at most "
        f"{MAX_CHANGES}",
    )
    omitted: int = Field(default=0, description="events read beyond those shown")
    history: FunctionHistory | None = None
    gaps: list[str] = Field(
        default_factory=list, description="what could not be read or was not looked up (the rest stands)"
    )
    error: str | None = None


def _event_name(name: str, source: str | None) -> str:
    if source == "lambda.amazonaws.com" and (m := _LAMBDA_EVENT_VERSION.match(name)):
        return m.group(1)
    return name


# Where an error message starts quoting the request (Lambda's environment variables: their values).
_QUOTED_REQUEST = re.compile(r"\s*String measured:.*$", re.S)
MAX_ERROR_MESSAGE = 240


def _caller(event: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(who, errorCode, errorMessage) from a LookupEvents event: userIdentity.arn from its CloudTrailEvent, else
    Username; the message cut where it quotes the request (never a variable's value)."""
    who, error_code, message = None, None, None
    detail = event.get("CloudTrailEvent")
    if isinstance(detail, str) and len(detail) < 200_000:
        try:
            parsed = json.loads(detail)
        except ValueError:
            parsed = {}
        if isinstance(parsed, dict):
            identity = parsed.get("userIdentity") or {}
            who = identity.get("arn") if isinstance(identity, dict) else None
            error_code = parsed.get("errorCode")
            if isinstance(text := parsed.get("errorMessage"), str) and text:
                message = _QUOTED_REQUEST.sub("", text)[:MAX_ERROR_MESSAGE]
    return who or event.get("Username"), error_code, message


def _change_subjects(clients: AwsClients, name: str, config: dict[str, Any], gaps: list[str]) -> list[str]:
    """What CloudTrail names for the function's resources, in the order they are looked up."""
    subjects = [name, config["Role"].rsplit("/", 1)[-1]]
    mappings: list[dict[str, Any]] = []
    try:
        mappings = clients.get("lambda").list_event_source_mappings(FunctionName=name).get("EventSourceMappings", [])
    except AWS_ERRORS as exc:
        gaps.append(f"event source mappings: {describe_error(exc)}")
    subjects += [m["UUID"] for m in mappings]
    if config.get("KMSKeyArn"):
        subjects.append(config["KMSKeyArn"])
    subjects += [m["EventSourceArn"] for m in mappings if ":sqs:" in m.get("EventSourceArn", "")]
    variables = (config.get("Environment") or {}).get("Variables") or {}
    subjects += sorted(v for v in variables.values() if SECRET_ARN_IN_TEXT.match(v or ""))
    return list(dict.fromkeys(subjects))


def read_recent_changes(clients: AwsClients, lambda_name: str, hours: int = 24) -> RecentChanges:
    """Who changed the function and what it depends on in the last ``hours`` (CloudTrail, at most 6 LookupEvents
    calls), and its version and alias history."""
    name = function_name_of(lambda_name)
    result = RecentChanges(function_name=name, window_hours=hours)
    lam = clients.get("lambda")
    try:
        config = lam.get_function_configuration(FunctionName=name)
    except AWS_ERRORS as exc:
        result.error = describe_error(exc)
        return result
    subjects = _change_subjects(clients, name, config, result.gaps)
    end = datetime.now(UTC)
    start = end - timedelta(hours=hours)
    found: dict[str, tuple[datetime, ChangeEvent]] = {}
    trail = clients.get("cloudtrail")
    for index, subject in enumerate(subjects):
        if index >= MAX_TRAIL_LOOKUPS:
            result.gaps.append(f"not looked up (at most {MAX_TRAIL_LOOKUPS} CloudTrail lookups): {subject}")
            continue
        try:
            page = trail.lookup_events(
                LookupAttributes=[{"AttributeKey": "ResourceName", "AttributeValue": subject}],
                StartTime=start,
                EndTime=end,
                MaxResults=TRAIL_PAGE,
            )
        except (*AWS_ERRORS, NotImplementedError) as exc:  # moto in-process raises NotImplementedError
            # Not allowed, not implemented or throttled: the others would fare no better.
            result.gaps += [f"CloudTrail: {describe_error(exc)}"] + [f"not looked up: {s}" for s in subjects[index:]]
            break
        if page.get("NextToken"):
            result.gaps.append(f"{subject}: more than {TRAIL_PAGE} events in the window, only the newest read")
        for event in page.get("Events", []):
            when = _aws_time(event.get("EventTime"))
            if event.get("ReadOnly") == "true" or when is None or event.get("EventId") in found:
                continue
            who, error_code, error_message = _caller(event)
            found[event.get("EventId") or f"{subject}-{len(found)}"] = (
                when,
                ChangeEvent(
                    time=iso(when),
                    event_name=_event_name(str(event.get("EventName", "")), event.get("EventSource")),
                    event_source=event.get("EventSource"),
                    resource=subject,
                    who=who,
                    error_code=error_code,
                    error_message=error_message,
                ),
            )
    newest = sorted(found.values(), key=lambda e: e[0], reverse=True)
    result.events = [e for _, e in newest[:MAX_CHANGES]]
    result.omitted = max(0, len(newest) - MAX_CHANGES)
    result.history = _history(clients, name, config, result.gaps)
    return result


def _history(clients: AwsClients, name: str, config: dict[str, Any], gaps: list[str]) -> FunctionHistory:
    lam = clients.get("lambda")
    history = FunctionHistory(last_modified=config.get("LastModified"))
    versions: list[dict[str, Any]] = []
    try:
        kwargs: dict[str, Any] = {"FunctionName": name}
        for _ in range(MAX_VERSION_PAGES):
            page = lam.list_versions_by_function(**kwargs)
            versions += [v for v in page.get("Versions", []) if v.get("Version") != "$LATEST"]
            if not (marker := page.get("NextMarker")):
                break
            kwargs["Marker"] = marker
        else:
            gaps.append(f"versions: more than {MAX_VERSION_PAGES} pages, the rest not read")
    except AWS_ERRORS as exc:
        gaps.append(f"versions: {describe_error(exc)}")
    versions.sort(key=lambda v: int(v["Version"]) if str(v.get("Version")).isdigit() else -1, reverse=True)
    history.versions = [
        VersionInfo(
            version=v["Version"],
            last_modified=v.get("LastModified"),
            code_sha256=v.get("CodeSha256"),
            description=(v.get("Description") or None) and v["Description"][:200],
        )
        for v in versions[:MAX_VERSIONS]
    ]
    history.omitted_versions = max(0, len(versions) - MAX_VERSIONS)
    try:
        aliases = []
        for page in lam.get_paginator("list_aliases").paginate(FunctionName=name):
            aliases += page.get("Aliases", [])
    except AWS_ERRORS as exc:
        gaps.append(f"aliases: {describe_error(exc)}")
        aliases = []
    aliases.sort(key=lambda a: a["Name"])
    history.aliases = [
        AliasInfo(
            name=a["Name"],
            function_version=a["FunctionVersion"],
            routing=((a.get("RoutingConfig") or {}).get("AdditionalVersionWeights") or None),
        )
        for a in aliases[:MAX_ALIASES]
    ]
    history.omitted_aliases = max(0, len(aliases) - MAX_ALIASES)
    return history
