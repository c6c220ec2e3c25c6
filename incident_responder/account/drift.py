"""VERIFYING and INVESTIGATING: drift of a function's configuration against its recorded baseline.

One difference per changed path (:func:`diff_configurations`), and when each appeared where the account
records it (:func:`date_differences`: CloudTrail, else the resource's own modification time).
"""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, Field

from incident_responder.account.state import FunctionConfiguration, permission_key
from incident_responder.core.aws import AwsClients
from incident_responder.core.encoding import canonical, iso


class Difference(BaseModel):
    path: str = Field(description="dotted path into the configuration, e.g. role.inline_policies.s3-access")
    baseline: Any = None
    current: Any = None
    changed_at: str | None = Field(
        default=None,
        description="ISO 8601 UTC: when the difference appeared, where the account can tell (None: it cannot)",
    )
    changed_at_source: str | None = Field(
        default=None,
        description="what changed_at is: 'cloudtrail:<event>' (the change itself), 'function.LastModified' (the "
        "function's latest configuration update), 'version:<n>.LastModified' (when the version the alias routes to "
        "was published: the alias moved then or later), 'event_source_mapping.LastModified' (its latest update)",
    )


def _comparable(configuration: FunctionConfiguration) -> dict[str, Any]:
    data = configuration.model_dump(mode="json")
    # Keyed by id rather than listed, so a difference names the group or subnet it is about.
    network = data["network"]
    network["security_groups"] = {g.pop("group_id"): g for g in network["security_groups"]}
    network["subnets"] = {s.pop("subnet_id"): s for s in network["subnets"]}
    data["aliases"] = {a.pop("name"): a for a in data["aliases"]}
    data["kms_keys"] = {k.pop("key_arn"): k for k in data["kms_keys"]}
    data["event_source_mappings"] = {m.pop("uuid"): m for m in data["event_source_mappings"]}
    data["secrets"] = {s.pop("secret_arn"): s for s in data["secrets"]}
    data["invoke_permissions"] = {
        permission_key(p): data["invoke_permissions"][i] for i, p in enumerate(configuration.invoke_permissions)
    }
    return data


# Recorded only by baselines taken since they were added: an older baseline does not compare them. Every field
# with a default but the three an older baseline compares as empty.
_LATER_FIELDS = tuple(
    name
    for name, field in FunctionConfiguration.model_fields.items()
    if not field.is_required() and name not in ("aliases", "kms_keys", "event_source_mappings")
)
_LATER_NESTED = {
    "kms_keys": ("role_may_decrypt",),
    "event_source_mappings": ("queue_visibility_timeout", "dead_letter_queue_arn"),
}


def _recorded(baseline: FunctionConfiguration, data: dict[str, Any], current: dict[str, Any]) -> None:
    """Drop from both sides what the baseline did not record (fields added after it was taken)."""
    for name in _LATER_FIELDS:
        if name not in baseline.model_fields_set:
            data.pop(name, None)
            current.pop(name, None)
    for group, names in _LATER_NESTED.items():
        for key, item in data.get(group, {}).items():
            for name in names:
                if item.get(name) is None and isinstance(current.get(group, {}).get(key), dict):
                    item.pop(name, None)
                    current[group][key].pop(name, None)


def _diff(baseline: Any, current: Any, path: str, out: list[Difference]) -> None:
    if isinstance(baseline, dict) and isinstance(current, dict):
        for key in sorted(set(baseline) | set(current), key=str):
            sub = f"{path}.{key}" if path else str(key)
            _diff(baseline.get(key), current.get(key), sub, out)
    # Lists of rules or statements are compared as sets: AWS does not promise an order.
    elif canonical(baseline, unordered=True) != canonical(current, unordered=True):
        out.append(Difference(path=path, baseline=baseline, current=current))


def diff_configurations(baseline: FunctionConfiguration, current: FunctionConfiguration) -> list[Difference]:
    """Differences between two configurations, one per changed leaf (lists compared whole).

    >>> from incident_responder.account.state import NetworkState, RoleState
    >>> role = RoleState(role_name="r", role_arn="arn:aws:iam::1:role/r")
    >>> a = FunctionConfiguration(function_name="f", role=role, reserved_concurrency=10,
    ...     timeout=30, memory_size=512, network=NetworkState(in_vpc=False))
    >>> [d.path for d in diff_configurations(a, a.model_copy(update={"timeout": 1}))]
    ['timeout']
    """
    out: list[Difference] = []
    before, now = _comparable(baseline), _comparable(current)
    _recorded(baseline, before, now)
    _diff(before, now, "", out)
    return out


# -- when each difference appeared -----------------------------------------------------------------
# CloudTrail names a change by its event (Lambda's carry an API version suffix: UpdateAlias20150331).
_TRAIL_EVENTS = {
    "role": ("PutRolePolicy", "DeleteRolePolicy", "AttachRolePolicy", "DetachRolePolicy", "UpdateAssumeRolePolicy"),
    "reserved_concurrency": ("PutFunctionConcurrency", "DeleteFunctionConcurrency"),
    "function": ("UpdateFunctionConfiguration",),
    "event_invoke_config": (
        "PutFunctionEventInvokeConfig",
        "UpdateFunctionEventInvokeConfig",
        "DeleteFunctionEventInvokeConfig",
    ),
    "security_group": ("AuthorizeSecurityGroupEgress", "RevokeSecurityGroupEgress", "ModifySecurityGroupRules"),
    "network_acl": (
        "CreateNetworkAclEntry",
        "DeleteNetworkAclEntry",
        "ReplaceNetworkAclEntry",
        "ReplaceNetworkAclAssociation",
    ),
    "alias": ("UpdateAlias", "CreateAlias", "DeleteAlias"),
    "kms_key": ("DisableKey", "EnableKey", "ScheduleKeyDeletion", "CancelKeyDeletion"),
    "event_source_mapping": ("UpdateEventSourceMapping", "CreateEventSourceMapping", "DeleteEventSourceMapping"),
    "key_policy": ("PutKeyPolicy", "CreateGrant", "RevokeGrant", "RetireGrant"),
    "queue": ("SetQueueAttributes",),
    "secret": ("DeleteSecret", "RestoreSecret", "UpdateSecret", "PutSecretValue"),
    "function_policy": ("AddPermission", "RemovePermission"),
}
# At most this many LookupEvents calls per drift check (CloudTrail allows 2 a second per account and region).
MAX_TRAIL_LOOKUPS = 6
# A trail that is not there (not implemented, not allowed) is asked again only after this long, per client.
TRAIL_RETRY_AFTER_SECONDS = 600
_TRAIL_DOWN_UNTIL = "_incident_responder_trail_down_until"
_LOOKUP_FAILURES = (ClientError, BotoCoreError, NotImplementedError)


def _utc(value: Any) -> datetime | None:
    """A time as AWS returns it (a datetime, or text such as 2026-11-23T18:44:05.108+0000), in UTC."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str):
        return None
    m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?$", value.strip())
    if not m:
        return None
    zone = m.group(3) or "Z"
    zone = "+00:00" if zone == "Z" else f"{zone[:3]}:{zone[-2:]}"
    fraction = f".{(m.group(2) or '0')[:6]}"
    try:
        return datetime.fromisoformat(m.group(1) + fraction + zone).astimezone(UTC)
    except ValueError:
        return None


def _subject(path: str, configuration: FunctionConfiguration | None) -> tuple[str, str | None]:
    """What a difference is about: (kind, the resource CloudTrail names) for its path."""
    parts = path.split(".")
    head = parts[0]
    if head == "role":
        if parts[1:2] in (["role_arn"], ["role_name"]):
            return "function", None
        return "role", configuration.role.role_name if configuration else None
    if head == "reserved_concurrency":
        return "reserved_concurrency", None
    if head == "invoke_permissions":
        return "function_policy", None  # AddPermission / RemovePermission name the function
    if head.startswith("async_"):  # the asynchronous invocation configuration (PutFunctionEventInvokeConfig)
        return "event_invoke_config", None
    if head in ("timeout", "memory_size", "ephemeral_storage", "environment") or len(parts) == 1:
        return "function", None  # a setting of the function itself (UpdateFunctionConfiguration)
    if head == "secrets":
        return "secret", path[len("secrets.") :].rsplit(".", 1)[0] if len(parts) > 2 else None
    if head == "network":
        if len(parts) <= 3:  # in_vpc, vpc_id, or a group / subnet attached or detached: the function's VPC config
            return "function", None
        if parts[1] == "security_groups":
            return "security_group", parts[2]
        subnets = {s.subnet_id: s.network_acl_id for s in configuration.network.subnets} if configuration else {}
        return "network_acl", subnets.get(parts[2])
    if head == "aliases":
        return "alias", None
    if head == "kms_keys" and parts[-1] == "role_may_decrypt":
        return "key_policy", path[len("kms_keys.") :].rsplit(".", 1)[0]
    if head == "kms_keys":
        key = path[len("kms_keys.") :].rsplit(".", 1)[0] if len(parts) > 2 else path[len("kms_keys.") :]
        return ("kms_key", key) if len(parts) > 2 else ("function", None)  # a whole key: the function's KMSKeyArn
    if head == "event_source_mappings" and parts[-1] == "queue_visibility_timeout" and configuration:
        sources = {m.uuid: m.event_source_arn for m in configuration.event_source_mappings}
        return "queue", sources.get(parts[1])
    if head == "event_source_mappings":
        return "event_source_mapping", parts[1] if len(parts) > 1 else None
    return "other", None


class _AccountClock:
    """The account's own records of when things changed, each read once and only when asked for."""

    def __init__(self, clients: AwsClients, function_name: str, since: datetime):
        self.clients = clients
        self.function_name = function_name
        self.since = since
        self.trail_lookups = 0
        self.trail_ok = True
        self._cache: dict[Any, Any] = {}

    def _once(self, key: Any, read) -> Any:
        if key not in self._cache:
            try:
                self._cache[key] = read()
            except _LOOKUP_FAILURES:
                self._cache[key] = None
        return self._cache[key]

    def trail(self, kind: str, resource: str | None) -> tuple[datetime, str] | None:
        """The newest CloudTrail event since the baseline that changed ``resource`` in this way."""
        if not resource or not self.trail_ok:
            return None
        if ("trail", resource) not in self._cache and self.trail_lookups >= MAX_TRAIL_LOOKUPS:
            return None
        trail = self.clients.get("cloudtrail")
        if getattr(trail, _TRAIL_DOWN_UNTIL, 0.0) > time.monotonic():
            return None

        def lookup() -> list[dict[str, Any]]:
            self.trail_lookups += 1
            try:
                return trail.lookup_events(
                    LookupAttributes=[{"AttributeKey": "ResourceName", "AttributeValue": resource}],
                    StartTime=self.since,
                    MaxResults=50,
                )["Events"]
            except _LOOKUP_FAILURES as exc:
                self.trail_ok = False  # stop asking in this drift check
                code = exc.response.get("Error", {}).get("Code", "") if isinstance(exc, ClientError) else ""
                if "Throttl" not in code:  # not implemented or not allowed: a warm process stops asking for a while
                    setattr(trail, _TRAIL_DOWN_UNTIL, time.monotonic() + TRAIL_RETRY_AFTER_SECONDS)
                raise

        events = self._once(("trail", resource), lookup) or []
        wanted = _TRAIL_EVENTS.get(kind, ())
        found = [
            (when, e["EventName"])
            for e in events
            if str(e.get("EventName", "")).startswith(wanted) and not _failed(e) and (when := _utc(e.get("EventTime")))
        ]
        return max(found) if found else None

    def function_modified(self) -> datetime | None:
        lam = self.clients.get("lambda")
        config = self._once("function", lambda: lam.get_function_configuration(FunctionName=self.function_name))
        return _utc(config.get("LastModified")) if config else None

    def version_published(self, version: str) -> datetime | None:
        lam = self.clients.get("lambda")
        config = self._once(
            ("version", version),
            lambda: lam.get_function_configuration(FunctionName=self.function_name, Qualifier=version),
        )
        return _utc(config.get("LastModified")) if config else None

    def mapping_modified(self, uuid: str) -> datetime | None:
        # Listed (the permission the configuration's own read needs), not fetched one by one.
        mappings = self._once("mappings", self._list_mappings) or {}
        return _utc(mappings.get(uuid))

    def _list_mappings(self) -> dict[str, Any]:
        lam, found, marker = self.clients.get("lambda"), {}, None
        while True:
            page = lam.list_event_source_mappings(
                FunctionName=self.function_name, **({"Marker": marker} if marker else {})
            )
            found.update({m["UUID"]: m.get("LastModified") for m in page.get("EventSourceMappings", [])})
            if not (marker := page.get("NextMarker")):
                return found


def _failed(event: dict[str, Any]) -> bool:
    """CloudTrail records a failed call too (its errorCode set): it changed nothing."""
    detail = event.get("CloudTrailEvent")
    if not isinstance(detail, str) or '"errorCode"' not in detail:
        return False
    try:
        return bool(json.loads(detail).get("errorCode"))
    except (ValueError, AttributeError):
        return False


def date_differences(
    clients: AwsClients,
    function_name: str,
    differences: list[Difference],
    since: str,
    current: FunctionConfiguration | None = None,
) -> list[Difference]:
    """``differences`` with ``changed_at`` / ``changed_at_source`` set where the account can tell.

    CloudTrail's event for the change when LookupEvents answers; else the resource's own modification
    time (the function's, the alias's version's, the mapping's). A time not certainly after the baseline
    was captured (``since``) cannot be when a difference from it appeared, and is not given. Nothing
    here fails: a look-up that errs leaves the field unset.
    """
    start = _utc(since)
    if not differences or start is None:
        return differences
    # captured_at is cut to the second: only a time past that second is certainly after the capture.
    after = start + (timedelta(seconds=1) if "." not in since else timedelta(0))
    clock = _AccountClock(clients, function_name, start)
    aliases = {a.name: a.function_version for a in current.aliases} if current else {}
    dated = []
    for difference in differences:
        kind, resource = _subject(difference.path, current)
        trail_resource = (
            function_name
            if kind in ("function", "reserved_concurrency", "alias", "function_policy", "event_invoke_config")
            else resource
        )
        candidates: list[tuple[datetime | None, str]] = []
        if hit := clock.trail(kind, trail_resource):
            candidates.append((hit[0], f"cloudtrail:{hit[1]}"))
        if kind == "function":
            candidates.append((clock.function_modified(), "function.LastModified"))
        elif kind == "alias":
            version = aliases.get(difference.path.split(".")[1])
            if version and version != "$LATEST":
                candidates.append((clock.version_published(version), f"version:{version}.LastModified"))
        elif kind == "event_source_mapping" and resource and difference.current is not None:
            candidates.append((clock.mapping_modified(resource), "event_source_mapping.LastModified"))
        when = next(((t, source) for t, source in candidates if t is not None and t >= after), None)
        if when:
            difference = difference.model_copy(
                update={"changed_at": iso(when[0], "milliseconds"), "changed_at_source": when[1]}
            )
        dated.append(difference)
    return dated
