"""INVESTIGATING: get_lambda_config, the function's configuration as the diagnostics tool returns it (an
allow-list of fields: the environment's values never leave the server)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from incident_responder.account.compact import Compact
from incident_responder.account.errors import AWS_ERRORS, describe_error
from incident_responder.account.names import function_name_of
from incident_responder.account.state import (
    AliasState,
    permission_key,
    read_invoke_permissions,
    read_reserved_concurrency,
)
from incident_responder.core.aws import AwsClients


# -- get_lambda_config ----------------------------------------------------------------------------
class LambdaVpcConfig(Compact):
    SubnetIds: list[str] = Field(default_factory=list)
    SecurityGroupIds: list[str] = Field(default_factory=list)
    VpcId: str | None = None


class EventSourceMappingInfo(Compact):
    UUID: str
    EventSourceArn: str | None = None
    State: str | None = Field(default=None, description="Enabled, Disabled, Enabling, Disabling, Updating, ...")
    BatchSize: int | None = None
    StateTransitionReason: str | None = None  # unset: a user's change
    LastProcessingResult: str | None = None  # the last poll's; unset: OK, or no records processed
    Qualifier: str | None = Field(default=None, description="the alias or version it invokes (unset: $LATEST)")


class InvokedVersion(Compact):
    """A published version an alias or event source mapping invokes, as Lambda reports it."""

    Version: str
    State: str | None = Field(default=None, description="unset: Active")
    StateReasonCode: str | None = None
    SnapStart: str | None = None  # ApplyOn (OptimizationStatus On: it restores from a snapshot); unset: off


# What a healthy mapping reports (left out of results): AWS's and the emulators' spellings.
_ROUTINE_TRANSITIONS = {"User initiated", "USER_INITIATED"}
_ROUTINE_RESULTS = {"OK", "No records processed"}
# What a function that runs its invocations reports (left out of results).
_ROUTINE_STATES = {"Active"}
_ROUTINE_UPDATES = {"Successful"}


class LambdaConfig(Compact):
    FunctionName: str
    FunctionArn: str | None = None
    Qualifier: str | None = Field(default=None, description="the alias or version asked for (unset: $LATEST)")
    Version: str | None = Field(default=None, description="the version the qualifier runs, whose settings these are")
    Runtime: str | None = None
    Handler: str | None = None
    Role: str | None = None
    MemorySize: int | None = None
    Timeout: int | None = None
    LastModified: str | None = None
    State: str | None = Field(
        default=None, description="Pending, Inactive, Failed, ... (unset: Active, the only state that runs invocations)"
    )
    StateReason: str | None = None
    StateReasonCode: str | None = Field(default=None, description="Creating, Restoring, Idle, EniLimitExceeded, ...")
    LastUpdateStatus: str | None = Field(default=None, description="InProgress or Failed (unset: Successful)")
    LastUpdateStatusReason: str | None = None
    LastUpdateStatusReasonCode: str | None = None
    ReservedConcurrentExecutions: int | None = Field(
        default=None,
        description="unset: no reservation (shares the account's unreserved pool); 0: every invoke throttled",
    )
    VpcConfig: LambdaVpcConfig | None = None
    KMSKeyArn: str | None = Field(
        default=None, description="customer-managed key encrypting the environment (unset: an AWS-owned key)"
    )
    KMSKeyState: str | None = Field(
        default=None, description="that key's KeyState: Enabled, Disabled, PendingDeletion, ... (Lambda needs Enabled)"
    )
    Layers: list[str] = Field(default_factory=list, description="the layer version ARNs, in order (unset: none)")
    FileSystems: dict[str, str] = Field(default_factory=dict, description="EFS access point ARN -> local mount path")
    SnapStart: str | None = None  # ApplyOn (OptimizationStatus); unset: SnapStart off
    Aliases: dict[str, str] = Field(default_factory=dict, description="alias name -> the version it routes to")
    InvokePermissions: dict[str, str] | None = Field(
        default=None,
        description="the resource-based policy of the function and its aliases: statement (<alias>:<id> on an alias) "
        "-> the principal it lets invoke; {}: no statement (unset: not read)",
    )
    EventSourceMappings: list[EventSourceMappingInfo] = Field(
        default_factory=list, description="queues and streams that invoke the function"
    )
    InvokedVersions: list[InvokedVersion] = Field(
        default_factory=list,
        description="versions its aliases and mappings invoke that are not Active or restore from a SnapStart "
        "snapshot (unset: none)",
    )
    read_errors: list[str] = Field(
        default_factory=list, description="parts that could not be read (the rest of the result stands)"
    )
    error: str | None = None


def get_lambda_config(clients: AwsClients, lambda_name: str, qualifier: str | None = None) -> LambdaConfig:
    """The function's configuration; with a ``qualifier``, that of the version the alias (or version) names."""
    name = function_name_of(lambda_name)
    lam = clients.get("lambda")
    try:
        raw = lam.get_function_configuration(FunctionName=name, **({"Qualifier": qualifier} if qualifier else {}))
        reserved = read_reserved_concurrency(clients, name)
    except AWS_ERRORS as exc:
        return LambdaConfig(FunctionName=name, error=describe_error(exc))
    vpc = raw.get("VpcConfig") or {}
    # Allow-list only: Environment (and anything else not named here) never leaves the server.
    config = LambdaConfig(
        FunctionName=raw["FunctionName"],
        FunctionArn=raw.get("FunctionArn"),
        Qualifier=qualifier,
        Version=raw.get("Version") if qualifier else None,
        Runtime=raw.get("Runtime"),
        Handler=raw.get("Handler"),
        Role=raw.get("Role"),
        MemorySize=raw.get("MemorySize"),
        Timeout=raw.get("Timeout"),
        LastModified=raw.get("LastModified"),
        # The function's state only when it is not the routine one (Active, the last update Successful).
        State=_unless(raw.get("State"), _ROUTINE_STATES),
        StateReason=raw.get("StateReason") or None,
        StateReasonCode=raw.get("StateReasonCode") or None,
        LastUpdateStatus=_unless(raw.get("LastUpdateStatus"), _ROUTINE_UPDATES),
        LastUpdateStatusReason=raw.get("LastUpdateStatusReason") or None,
        LastUpdateStatusReasonCode=raw.get("LastUpdateStatusReasonCode") or None,
        ReservedConcurrentExecutions=reserved,
        VpcConfig=LambdaVpcConfig(
            SubnetIds=vpc.get("SubnetIds", []), SecurityGroupIds=vpc.get("SecurityGroupIds", []), VpcId=vpc.get("VpcId")
        )
        if vpc.get("SubnetIds") or vpc.get("SecurityGroupIds")
        else None,
        KMSKeyArn=raw.get("KMSKeyArn") or None,
        Layers=[layer["Arn"] for layer in raw.get("Layers") or []],
        FileSystems={f.get("Arn", ""): f.get("LocalMountPath", "") for f in raw.get("FileSystemConfigs") or []},
        SnapStart=_snap_start(raw.get("SnapStart") or {}),
    )
    # Each further part is read on its own: one the server may not read leaves the others standing.
    if config.KMSKeyArn:
        try:
            config.KMSKeyState = clients.get("kms").describe_key(KeyId=config.KMSKeyArn)["KeyMetadata"].get("KeyState")
        except AWS_ERRORS as exc:
            config.read_errors.append(f"KMSKeyState: {describe_error(exc)}")
    try:
        for page in lam.get_paginator("list_aliases").paginate(FunctionName=name):
            config.Aliases.update({a["Name"]: a["FunctionVersion"] for a in page["Aliases"]})
    except AWS_ERRORS as exc:
        config.read_errors.append(f"Aliases: {describe_error(exc)}")
    try:
        aliases = [AliasState(name=a, function_version=v) for a, v in config.Aliases.items()]
        config.InvokePermissions = {
            permission_key(p): p.principal for p in read_invoke_permissions(clients, name, aliases)
        }
    except AWS_ERRORS as exc:
        config.read_errors.append(f"InvokePermissions: {describe_error(exc)}")
    try:
        for page in lam.get_paginator("list_event_source_mappings").paginate(FunctionName=name):
            config.EventSourceMappings += [
                EventSourceMappingInfo(
                    UUID=m["UUID"],
                    EventSourceArn=m.get("EventSourceArn"),
                    State=m.get("State"),
                    BatchSize=m.get("BatchSize"),
                    StateTransitionReason=_unless(m.get("StateTransitionReason"), _ROUTINE_TRANSITIONS),
                    LastProcessingResult=_unless(m.get("LastProcessingResult"), _ROUTINE_RESULTS),
                    Qualifier=str(m.get("FunctionArn") or "").split(":function:", 1)[-1].partition(":")[2] or None,
                )
                for m in page["EventSourceMappings"]
            ]
    except AWS_ERRORS as exc:
        config.read_errors.append(f"EventSourceMappings: {describe_error(exc)}")
    _read_invoked_versions(lam, name, config)
    return config


def _read_invoked_versions(lam: Any, name: str, config: LambdaConfig) -> None:
    """The versions the aliases and mappings invoke whose state is not routine (a few: each alias or mapping names
    one)."""
    invoked = [*config.Aliases.values(), *(m.Qualifier for m in config.EventSourceMappings if m.Qualifier)]
    for qualifier in list(dict.fromkeys(invoked))[:10]:
        try:
            raw = lam.get_function_configuration(FunctionName=name, Qualifier=qualifier)
        except AWS_ERRORS as exc:
            config.read_errors.append(f"InvokedVersions: {describe_error(exc)}")
            continue
        version = InvokedVersion(
            Version=str(raw.get("Version") or qualifier),
            State=_unless(raw.get("State"), _ROUTINE_STATES),
            StateReasonCode=raw.get("StateReasonCode") or None,
            SnapStart=_snap_start(raw.get("SnapStart") or {}),
        )
        known = {v.Version for v in config.InvokedVersions}
        if (version.State or version.SnapStart) and version.Version not in known:
            config.InvokedVersions.append(version)


def _snap_start(config: dict[str, Any]) -> str | None:
    if config.get("ApplyOn") in (None, "None"):
        return None
    return f"{config['ApplyOn']} (OptimizationStatus {config.get('OptimizationStatus')})"


def _unless(value: str | None, routine: set[str]) -> str | None:
    return None if value in routine else value
