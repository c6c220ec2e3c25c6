"""INVESTIGATING: get_dependencies' secrets, parameters, keys and tables: what the function reads, as it is now."""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from pydantic import Field

from incident_responder.account.compact import Compact
from incident_responder.account.environment import read_secrets
from incident_responder.account.errors import AWS_ERRORS, describe_error
from incident_responder.account.keys import read_kms_keys
from incident_responder.account.queue_dependencies import _Reader
from incident_responder.account.readings import _code
from incident_responder.account.role import read_role, role_policy_documents

MAX_PARAMETERS = 10
MAX_TABLES = 5

PARAMETER_ARN_RE = re.compile(r"^arn:aws[a-zA-Z-]*:ssm:[a-z0-9-]+:\d{12}:parameter(/[A-Za-z0-9_.\-/]{1,2047})$")
PARAMETER_NAME_RE = re.compile(r"^/[A-Za-z0-9_.\-/]{1,2047}$")
TABLE_ARN_RE = re.compile(r"^arn:aws[a-zA-Z-]*:dynamodb:[a-z0-9-]+:\d{12}:table/([A-Za-z0-9_.-]{3,255})(?:/.*)?$")
TABLE_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")


class SecretDependency(Compact):
    secret_arn: str
    variable: str
    exists: bool = Field(default=True, description="false: no such secret (left out: it exists)")
    deleted_date: str | None = Field(default=None, description="when Secrets Manager deletes it (scheduled)")
    scheduled_for_deletion: bool = False


class ParameterDependency(Compact):
    name: str
    variable: str
    exists: bool = Field(default=True, description="false: no such parameter (left out: it exists)")


class KeyDependency(Compact):
    key_arn: str
    used_for: str = "environment"
    key_state: str | None = Field(default=None, description="Enabled, Disabled, PendingDeletion, ...")
    role_may_decrypt: bool | None = Field(
        default=None,
        description="whether the key policy (and the role's own policies) let the execution role decrypt with it "
        "(unset: the key policy could not be read)",
    )


class TableDependency(Compact):
    table_name: str
    variable: str | None = Field(
        default=None, description="the environment variable naming it (unset: the role's policy)"
    )
    exists: bool = Field(default=True, description="false: no such table (left out: it exists)")
    status: str | None = Field(default=None, description="TableStatus: ACTIVE, UPDATING, ...")
    billing_mode: str | None = Field(default=None, description="PROVISIONED or PAY_PER_REQUEST")
    read_throttle_events: float | None = Field(
        default=None, description="AWS/DynamoDB ReadThrottleEvents, sum over the last 60 minutes (unset: 0)"
    )
    write_throttle_events: float | None = Field(
        default=None, description="AWS/DynamoDB WriteThrottleEvents, sum over the last 60 minutes (unset: 0)"
    )


def _secrets(reader: _Reader, variables: dict[str, str]) -> list[SecretDependency]:
    found = reader.attempt("secrets", lambda: read_secrets(reader.clients, variables), []) or []
    return [
        SecretDependency(
            secret_arn=s.secret_arn,
            variable=s.variable,
            exists=s.exists,
            deleted_date=s.deleted_date,
            scheduled_for_deletion=s.deleted_date is not None,
        )
        for s in found
    ]


def _parameter_names(value: str) -> list[str]:
    """The names an environment value may give a parameter: an ARN's (its suffix, with and without the leading
    slash when it has no other: a top-level name's ARN does not say which) or a name starting with /."""
    if m := PARAMETER_ARN_RE.match(value):
        suffix = m.group(1)
        return [suffix] if "/" in suffix[1:] else [suffix[1:], suffix]
    return [value] if PARAMETER_NAME_RE.match(value) else []


def _parameters(reader: _Reader, variables: dict[str, str]) -> list[ParameterDependency]:
    candidates = [
        (variable, names) for variable, value in sorted(variables.items()) if (names := _parameter_names(value or ""))
    ]
    if len(candidates) > MAX_PARAMETERS:
        reader.gaps.append(f"parameters: only the first {MAX_PARAMETERS} of {len(candidates)} looked up")
    ssm = reader.clients.get("ssm")
    out = []
    for variable, names in candidates[:MAX_PARAMETERS]:
        # DescribeParameters, never GetParameter: the metadata, not the value.
        described = reader.attempt(
            f"parameter {names[-1]}",
            partial(ssm.describe_parameters, ParameterFilters=[{"Key": "Name", "Option": "Equals", "Values": names}]),
        )
        if described is None:
            continue
        found = [p["Name"] for p in described.get("Parameters", [])]
        out.append(ParameterDependency(name=found[0] if found else names[-1], variable=variable, exists=bool(found)))
    return out


def _keys(reader: _Reader, config: dict[str, Any]) -> list[KeyDependency]:
    if not config.get("KMSKeyArn"):
        return []
    role = reader.attempt("role (for role_may_decrypt)", lambda: read_role(reader.clients, config["Role"]))
    keys = reader.attempt("kms key", lambda: read_kms_keys(reader.clients, config, role), []) or []
    return [
        KeyDependency(
            key_arn=k.key_arn, used_for=k.used_for, key_state=k.key_state, role_may_decrypt=k.role_may_decrypt
        )
        for k in keys
    ]


def _policy_table_names(documents: list[dict[str, Any]]) -> list[str]:
    names = []
    for document in documents:
        statements = document.get("Statement", [])
        for statement in statements if isinstance(statements, list) else [statements]:
            if not isinstance(statement, dict) or statement.get("Effect") != "Allow":
                continue
            resources = statement.get("Resource", [])
            for resource in [resources] if isinstance(resources, str) else resources or []:
                if isinstance(resource, str) and "*" not in resource and (m := TABLE_ARN_RE.match(resource)):
                    names.append(m.group(1))
    return names


def _tables(reader: _Reader, config: dict[str, Any], variables: dict[str, str]) -> list[TableDependency]:
    named: dict[str, str | None] = {}  # table name -> the variable naming it (None: the role's policy)
    for variable, value in sorted(variables.items()):
        if m := TABLE_ARN_RE.match(value or ""):
            named.setdefault(m.group(1), variable)
        elif "TABLE" in variable.upper() and TABLE_NAME_RE.match(value or ""):
            named.setdefault(value, variable)
    role = reader.attempt("role (for the tables its policies name)", lambda: read_role(reader.clients, config["Role"]))
    if role is not None:
        for table in _policy_table_names(role_policy_documents(reader.clients, role)):
            named.setdefault(table, None)
    if len(named) > MAX_TABLES:
        reader.gaps.append(f"tables: only the first {MAX_TABLES} of {len(named)} shown")
    ddb = reader.clients.in_account("dynamodb")
    out = []
    for table, named_by in list(named.items())[:MAX_TABLES]:
        entry = TableDependency(table_name=table, variable=named_by)
        try:
            described = ddb.describe_table(TableName=table)["Table"]
            entry.status = described.get("TableStatus")
            entry.billing_mode = (described.get("BillingModeSummary") or {}).get("BillingMode") or "PROVISIONED"
        except AWS_ERRORS as exc:
            if _code(exc) == "ResourceNotFoundException":
                entry.exists = False
            else:
                reader.gaps.append(f"table {table}: {describe_error(exc)}")
        out.append(entry)
    return out
