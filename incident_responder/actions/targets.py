"""PROPOSING and REMEDIATING: whether an action's target names what its parameters change, in the incident's function."""

from __future__ import annotations

from collections.abc import Iterable

from incident_responder.account.event_sources import queue_url_of
from incident_responder.account.names import function_name_of
from incident_responder.account.state import FunctionConfiguration
from incident_responder.core.contracts import (
    RemediationAction,
    RollbackAliasParams,
)


def _names(target: str, kind: str, identifiers: Iterable[str]) -> bool:
    """Whether ``target`` is one of ``identifiers``, or an ARN of that ``kind`` naming one of them."""
    ids = {i for i in identifiers if i}
    if target in ids:
        return True
    if kind == "function":
        try:
            return function_name_of(target) in ids
        except ValueError:
            return False
    if kind == "kms":
        # The key's ARN, or its id (the last segment of the ARN); an alias ARN names no key.
        return any(target == i.rsplit("/", 1)[-1] and ":" not in target for i in ids)
    if kind == "esm":
        # arn:aws:lambda:REGION:ACCOUNT:event-source-mapping:UUID
        parts = target.split(":")
        return len(parts) == 7 and parts[2] == "lambda" and parts[5] == "event-source-mapping" and parts[6] in ids
    if kind == "sqs":
        # The queue's ARN (matched above) or its URL, as SQS names a queue.
        return any(target == queue_url_of(i) for i in ids if i.count(":") == 5)
    if kind == "secret":
        return False  # the full ARN only (matched above): a name or partial ARN may name another secret
    # role/[path/]NAME, security-group/ID, network-acl/ID: the last path segment names the resource.
    service = {"role": ":iam::", "ec2": ":ec2:"}[kind]
    return target.startswith("arn:") and service in target and target.rsplit("/", 1)[-1] in ids


def _target_reason(action: RemediationAction, names: str, kind: str, identifiers: Iterable[str]) -> list[str]:
    if _names(action.target_resource, kind, identifiers):
        return []
    return [f"target_resource {action.target_resource[:200]} does not name {names} the parameters change"]


def _alias_target_reason(action: RemediationAction, p: RollbackAliasParams) -> list[str]:
    """The function (name or ARN), or the ARN qualified with this alias; never another qualifier."""
    target = action.target_resource
    try:
        named = function_name_of(target) == p.function_name
    except ValueError:
        named = False
    qualifier = target.split(":")[7] if target.startswith("arn:") and target.count(":") == 7 else p.alias_name
    if named and qualifier == p.alias_name:
        return []
    return [f"target_resource {target[:200]} does not name the function or its alias {p.alias_name}"]


def _other_function(function_name: str, current: FunctionConfiguration) -> list[str]:
    if function_name == current.function_name:
        return []
    return [f"targets function {function_name}, not the incident's function {current.function_name}"]
