"""PROPOSING and REMEDIATING: restores of the function's own settings and of how it is invoked.

Reserved concurrency, timeout, memory and ephemeral storage equal to the baseline's, an alias pointed back at
the version it had then (still the same code), a mapping recorded Enabled, and a queue's visibility timeout.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from incident_responder.account.state import FunctionConfiguration
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    EnableEventSourceMappingParams,
    FaultType,
    RemediationAction,
    RestoreQueueAttributesParams,
    RollbackAliasParams,
    UpdateConcurrencyParams,
    UpdateFunctionConfigurationParams,
)
from incident_responder.proposal.guardrails.targets import _other_function

# Lambda reports a mapping it is turning on as Enabling for a few seconds before Enabled.
ENABLED_STATES = ("Enabled", "Enabling")


def _check_concurrency(
    p: UpdateConcurrencyParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    reasons = _other_function(p.function_name, current)
    before = baseline.reserved_concurrency
    if p.reserved_concurrent_executions != before:
        shown = "no reservation" if before is None else before
        reasons.append(f"reserved concurrency must equal the baseline ({shown}): anything else is not a restore")
    elif current.reserved_concurrency == before:
        reasons.append("reserved concurrency already equals the baseline: nothing to restore")
    return reasons


def _check_storage_fault(action: RemediationAction, p: UpdateFunctionConfigurationParams) -> list[str]:
    """Ephemeral storage is restored for storage_exhaustion only, and that fault's action changes nothing else."""
    if p.ephemeral_storage is not None and action.fault_type != FaultType.STORAGE_EXHAUSTION:
        return [f"ephemeral storage restores /tmp, which does not remedy {action.fault_type}"]
    if action.fault_type == FaultType.STORAGE_EXHAUSTION and (
        p.ephemeral_storage is None or p.timeout is not None or p.memory_size is not None
    ):
        return ["storage_exhaustion is remedied by ephemeral storage alone, not by timeout or memory"]
    return []


def _check_configuration(
    p: UpdateFunctionConfigurationParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    reasons = _other_function(p.function_name, current)
    if p.timeout is not None and p.timeout != baseline.timeout:
        reasons.append(f"timeout {p.timeout} s must equal the baseline {baseline.timeout} s")
    if p.memory_size is not None and p.memory_size != baseline.memory_size:
        reasons.append(f"memory {p.memory_size} MB must equal the baseline {baseline.memory_size} MB")
    if p.ephemeral_storage is not None:
        before, now = baseline.ephemeral_storage, current.ephemeral_storage
        if before is None:
            reasons.append("the baseline did not record ephemeral storage: there is no value to restore")
        elif p.ephemeral_storage != before:
            reasons.append(f"ephemeral storage {p.ephemeral_storage} MB must equal the baseline {before} MB")
        elif now is not None and now > before:
            reasons.append(
                f"ephemeral storage is {now} MB, more than the baseline's {before} MB: shrinking /tmp restores "
                "no exhausted storage"
            )
    unchanged = (
        (p.timeout is None or p.timeout == current.timeout)
        and (p.memory_size is None or p.memory_size == current.memory_size)
        and (p.ephemeral_storage is None or p.ephemeral_storage == current.ephemeral_storage)
    )
    if not reasons and unchanged:
        reasons.append("timeout, memory and ephemeral storage already equal the baseline: nothing to restore")
    return reasons


def version_code_sha256(clients: AwsClients, function_name: str, version: str) -> str | None:
    """The code hash of a published version; None when the version does not exist."""
    try:
        config = clients.get("lambda").get_function_configuration(FunctionName=function_name, Qualifier=version)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return None
        raise
    return config["CodeSha256"]


def _check_alias(
    p: RollbackAliasParams,
    current: FunctionConfiguration,
    baseline: FunctionConfiguration,
    clients: AwsClients | None = None,
) -> list[str]:
    reasons = _other_function(p.function_name, current)
    if reasons:
        return reasons
    recorded = {a.name: a for a in baseline.aliases}
    base = recorded.get(p.alias_name)
    if base is None:
        known = ", ".join(sorted(recorded)) or "none"
        return [f"alias {p.alias_name} is not one of the function's aliases recorded in the baseline ({known})"]
    now = next((a for a in current.aliases if a.name == p.alias_name), None)
    if now is None:
        return [f"alias {p.alias_name} no longer exists: there is nothing to point back"]
    if p.function_version != base.function_version:
        return [
            f"version {p.function_version} is not alias {p.alias_name}'s baseline version {base.function_version}: "
            "anything else is not a restore"
        ]
    if now.function_version == base.function_version:
        return [
            f"alias {p.alias_name} already routes to its baseline version {base.function_version}: nothing to restore"
        ]
    if clients is not None:
        code = version_code_sha256(clients, p.function_name, p.function_version)
        if code is None:
            return [f"version {p.function_version} no longer exists: nothing to roll back to"]
        if code != base.code_sha256:
            return [f"version {p.function_version}'s code hash is not the one the baseline recorded"]
    return []


def _check_event_source(
    p: EnableEventSourceMappingParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    reasons = _other_function(p.function_name, current)
    if reasons:
        return reasons
    recorded = {m.uuid: m for m in baseline.event_source_mappings}
    if p.uuid not in recorded:
        known = ", ".join(sorted(recorded)) or "none"
        return [f"mapping {p.uuid} is not one of the function's mappings recorded in the baseline ({known})"]
    if recorded[p.uuid].state != "Enabled":
        return [f"mapping {p.uuid} was {recorded[p.uuid].state} in the baseline, not Enabled"]
    now = next((m for m in current.event_source_mappings if m.uuid == p.uuid), None)
    if now is None:
        return [f"mapping {p.uuid} no longer invokes the function"]
    if now.state in ENABLED_STATES:
        return [f"mapping {p.uuid} is already {now.state}: nothing to restore"]
    return []


def _check_queue(
    p: RestoreQueueAttributesParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    recorded = [m for m in baseline.event_source_mappings if m.queue_visibility_timeout is not None]
    reads = [m for m in recorded if m.event_source_arn == p.queue_arn]
    if not reads:
        known = ", ".join(sorted({m.event_source_arn for m in recorded})) or "none"
        return [f"queue {p.queue_arn} is not the source of one of the function's mappings in the baseline ({known})"]
    before = reads[0].queue_visibility_timeout
    if any(m.queue_visibility_timeout != before for m in reads):
        return [f"the baseline recorded different visibility timeouts for queue {p.queue_arn}: a person decides"]
    if p.visibility_timeout != before:
        return [
            f"visibility timeout {p.visibility_timeout} s must equal the baseline's {before} s for queue {p.queue_arn}"
        ]
    mine = {m.uuid for m in reads}
    now = [m for m in current.event_source_mappings if m.uuid in mine and m.event_source_arn == p.queue_arn]
    if not now:
        return [f"the function's mapping no longer reads queue {p.queue_arn}"]
    if before is not None and before < current.timeout:
        return [
            f"the baseline's visibility timeout ({before} s) is shorter than the function's timeout "
            f"({current.timeout} s): restoring it leaves messages redelivered while still in flight"
        ]
    if all(m.queue_visibility_timeout == before for m in now):
        return [
            f"queue {p.queue_arn}'s visibility timeout already equals the baseline ({before} s): nothing to restore"
        ]
    return []
