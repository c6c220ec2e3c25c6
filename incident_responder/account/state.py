"""Every stage: a Lambda function's configuration as read, everything a baseline records and drift compares.

Read-only views of its configuration, IAM role (:mod:`incident_responder.account.role`), network path
(:mod:`~incident_responder.account.network`), key (:mod:`~incident_responder.account.keys`), event sources
(:mod:`~incident_responder.account.event_sources`) and environment (:mod:`~incident_responder.account.environment`).
One implementation shared by the diagnostics tools, the baseline (which records these views),
the chaos faults (which change them) and the lab workload (which obeys them). Shapes stay close to
the AWS APIs so that a restore can hand them back unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import Any

from pydantic import BaseModel, Field

from incident_responder.account.environment import SecretState, read_secrets, value_digest
from incident_responder.account.event_sources import EventSourceMappingState, read_event_source_mappings
from incident_responder.account.keys import KmsKeyState, read_kms_keys
from incident_responder.account.names import function_name_of
from incident_responder.account.network import NetworkState, read_network
from incident_responder.account.role import RoleState, read_role
from incident_responder.core.aws import AwsClients


class AliasState(BaseModel):
    """An alias and the published version it routes to (versions are immutable: the code hash names the code)."""

    name: str
    function_version: str
    code_sha256: str | None = Field(default=None, description="CodeSha256 of the version the alias points to")


class InvokePermission(BaseModel):
    """One statement of the function's resource-based policy: who may invoke it (AddPermission's own fields)."""

    statement_id: str
    qualifier: str | None = Field(default=None, description="the alias or version it grants on (None: the function)")
    action: str = "lambda:InvokeFunction"
    principal: str = Field(description="a service (apigateway.amazonaws.com), an account or ARN, or *")
    source_arn: str | None = None
    source_account: str | None = None
    principal_org_id: str | None = None
    # Any other condition, as the policy states it (a restore puts back only what AddPermission can express).
    other_conditions: bool = False


def permission_key(permission: InvokePermission) -> str:
    """How drift names a statement: ``<qualifier>:<statement id>``, or the statement id on the function itself."""
    return f"{permission.qualifier}:{permission.statement_id}" if permission.qualifier else permission.statement_id


class FunctionConfiguration(BaseModel):
    """What the baseline records and drift compares: everything a fault in this project can change."""

    function_name: str
    role: RoleState
    reserved_concurrency: int | None = Field(description="None means no reservation (unreserved pool)")
    timeout: int
    memory_size: int
    network: NetworkState
    # Recorded for baselines taken since these were added; an older baseline compares them as empty.
    aliases: list[AliasState] = Field(default_factory=list)
    kms_keys: list[KmsKeyState] = Field(default_factory=list)
    event_source_mappings: list[EventSourceMappingState] = Field(default_factory=list)
    environment: dict[str, str] = Field(
        default_factory=dict,
        description="environment variable names with a digest of each value (never the value itself)",
    )
    ephemeral_storage: int | None = Field(default=None, description="the /tmp size in MB (EphemeralStorage.Size)")
    secrets: list[SecretState] = Field(default_factory=list)
    handler: str | None = Field(default=None, description="file.method the runtime calls (None: a container image)")
    layers: list[str] | None = Field(default=None, description="the layer version ARNs, in order ([]: no layers)")
    runtime: str | None = Field(default=None, description="the Runtime identifier (None: a container image)")
    invoke_permissions: list[InvokePermission] = Field(
        default_factory=list, description="the function's resource-based policy (GetPolicy of it and each alias)"
    )
    # Asynchronous invocation (GetFunctionEventInvokeConfig; None: no configuration, Lambda's defaults of 2 retries
    # and 6 hours) and where failed events go.
    async_retry_attempts: int | None = Field(default=None, description="MaximumRetryAttempts")
    async_max_event_age: int | None = Field(default=None, description="MaximumEventAgeInSeconds")
    async_on_failure: str | None = Field(default=None, description="DestinationConfig.OnFailure.Destination")
    dead_letter_target: str | None = Field(default=None, description="DeadLetterConfig.TargetArn")


def read_reserved_concurrency(clients: AwsClients, function_name: str) -> int | None:
    # GetFunction omits Concurrency when the reservation is 0 in some implementations; this API does not.
    response = clients.get("lambda").get_function_concurrency(FunctionName=function_name)
    return response.get("ReservedConcurrentExecutions")


def read_aliases(clients: AwsClients, function_name: str) -> list[AliasState]:
    """The function's aliases with the code hash of the version each routes to (weighted routing not followed)."""
    lam = clients.get("lambda")
    aliases = []
    hashes: dict[str, str | None] = {}
    for page in lam.get_paginator("list_aliases").paginate(FunctionName=function_name):
        for alias in page["Aliases"]:
            version = alias["FunctionVersion"]
            if version not in hashes:
                config = lam.get_function_configuration(FunctionName=function_name, Qualifier=version)
                hashes[version] = config.get("CodeSha256")
            aliases.append(AliasState(name=alias["Name"], function_version=version, code_sha256=hashes[version]))
    return sorted(aliases, key=lambda a: a.name)


def _permission(statement: dict[str, Any]) -> InvokePermission:
    principal = statement.get("Principal")
    if isinstance(principal, dict):
        principal = next(iter(principal.values()), None)
    if isinstance(principal, list):
        principal = ",".join(sorted(principal))
    resource = str(statement.get("Resource", ""))
    parts = resource.split(":")
    found: dict[str, str] = {}
    other = False
    for operator, pairs in (statement.get("Condition") or {}).items():
        for key, value in pairs.items():
            field = {
                ("ArnLike", "aws:sourcearn"): "source_arn",
                ("StringEquals", "aws:sourceaccount"): "source_account",
                ("StringEquals", "aws:principalorgid"): "principal_org_id",
            }.get((operator, key.lower()))
            if field and isinstance(value, str):
                found[field] = value
            else:
                other = True
    action = statement.get("Action", "lambda:InvokeFunction")
    return InvokePermission(
        statement_id=str(statement.get("Sid", "")),
        qualifier=parts[7] if len(parts) > 7 else None,
        action=action if isinstance(action, str) else ",".join(sorted(action)),
        principal=str(principal or ""),
        other_conditions=other,
        **found,
    )


def read_invoke_permissions(
    clients: AwsClients, function_name: str, aliases: list[AliasState]
) -> list[InvokePermission]:
    """The statements of the function's resource-based policy and of each alias's (GetPolicy; none: no policy)."""
    lam = clients.get("lambda")
    found: dict[tuple[str, str | None], InvokePermission] = {}
    for qualifier in [None, *(a.name for a in aliases)]:
        try:
            policy = lam.get_policy(FunctionName=function_name, **({"Qualifier": qualifier} if qualifier else {}))
        except lam.exceptions.ResourceNotFoundException:
            continue
        for statement in json.loads(policy.get("Policy") or "{}").get("Statement", []):
            permission = _permission(statement)
            found[(permission.statement_id, permission.qualifier)] = permission
    return sorted(found.values(), key=lambda p: (p.qualifier or "", p.statement_id))


def read_event_invoke_config(clients: AwsClients, function_name: str) -> dict[str, Any]:
    """The function's asynchronous invocation configuration (unqualified); empty when it has none."""
    lam = clients.get("lambda")
    try:
        return lam.get_function_event_invoke_config(FunctionName=function_name)
    except lam.exceptions.ResourceNotFoundException:
        return {}


# The parts of a configuration read with calls of their own (GetFunctionConfiguration gives the rest): what a reader
# that needs only some of them (a restore lookup) names, the others taken as the baseline recorded them.
SECTIONS = frozenset(
    {
        "role",
        "reserved_concurrency",
        "network",
        "aliases",
        "kms_keys",
        "event_source_mappings",
        "secrets",
        "invoke_permissions",
        "async",
    }
)


def read_function_configuration(
    clients: AwsClients,
    name_or_arn: str,
    sections: Collection[str] | None = None,
    otherwise: FunctionConfiguration | None = None,
) -> FunctionConfiguration:
    """The current values of everything the baseline records, read fresh from the account; with ``sections``, only
    those parts are read (and what GetFunctionConfiguration itself gives), the rest taken from ``otherwise``."""
    name = function_name_of(name_or_arn)
    raw = clients.get("lambda").get_function_configuration(FunctionName=name)
    return configuration_from(clients, raw, sections, otherwise)


def configuration_from(
    clients: AwsClients,
    config: dict[str, Any],
    sections: Collection[str] | None = None,
    otherwise: FunctionConfiguration | None = None,
) -> FunctionConfiguration:
    """:class:`FunctionConfiguration` from a GetFunctionConfiguration response (role, concurrency and network read);
    with ``sections`` (of :data:`SECTIONS`) and ``otherwise``, only those parts are read, the rest taken from it."""
    if sections is not None and otherwise is None:
        raise ValueError("a partial read takes the parts it does not read from another configuration")
    wanted = SECTIONS if sections is None else frozenset(sections)
    if unknown := wanted - SECTIONS:
        raise ValueError(f"no such part of a configuration: {', '.join(sorted(unknown))}")

    def read(section: str, reader: Callable[[], Any], field: str) -> Any:
        return reader() if section in wanted or otherwise is None else getattr(otherwise, field)

    name = config["FunctionName"]
    role = read("role", lambda: read_role(clients, config["Role"]), "role")
    variables = (config.get("Environment") or {}).get("Variables") or {}
    aliases = read("aliases", lambda: read_aliases(clients, name), "aliases")
    if "async" in wanted or otherwise is None:
        invoke = read_event_invoke_config(clients, name)
        retries, age = invoke.get("MaximumRetryAttempts"), invoke.get("MaximumEventAgeInSeconds")
        on_failure = ((invoke.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination") or None
    else:
        retries, age, on_failure = (
            otherwise.async_retry_attempts,
            otherwise.async_max_event_age,
            otherwise.async_on_failure,
        )
    return FunctionConfiguration(
        function_name=name,
        role=role,
        reserved_concurrency=read(
            "reserved_concurrency", lambda: read_reserved_concurrency(clients, name), "reserved_concurrency"
        ),
        timeout=config["Timeout"],
        memory_size=config["MemorySize"],
        network=read("network", lambda: read_network(clients, config.get("VpcConfig")), "network"),
        aliases=aliases,
        kms_keys=read("kms_keys", lambda: read_kms_keys(clients, config, role), "kms_keys"),
        event_source_mappings=read(
            "event_source_mappings", lambda: read_event_source_mappings(clients, name), "event_source_mappings"
        ),
        environment={k: value_digest(v) for k, v in sorted(variables.items())},
        ephemeral_storage=(config.get("EphemeralStorage") or {}).get("Size"),
        secrets=read("secrets", lambda: read_secrets(clients, variables), "secrets"),
        handler=config.get("Handler"),
        runtime=config.get("Runtime"),
        layers=[layer["Arn"] for layer in config.get("Layers") or []],
        invoke_permissions=read(
            "invoke_permissions", lambda: read_invoke_permissions(clients, name, aliases), "invoke_permissions"
        ),
        async_retry_attempts=retries,
        async_max_event_age=age,
        async_on_failure=on_failure,
        dead_letter_target=(config.get("DeadLetterConfig") or {}).get("TargetArn") or None,
    )
