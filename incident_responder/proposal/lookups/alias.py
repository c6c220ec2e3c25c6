"""PROPOSING and REVIEWING: an alias routed elsewhere than recorded (a deployment regression), and its rollback."""

from __future__ import annotations

from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline
from incident_responder.account.errors import AWS_ERRORS, describe_error
from incident_responder.account.state import FunctionConfiguration
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    FaultType,
    ProposedAction,
    ProposedRollbackAlias,
    RollbackAliasParams,
)
from incident_responder.proposal.guardrails.function_settings import version_code_sha256
from incident_responder.proposal.lookups.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _lookup


class AliasRestore(BaseModel):
    alias_name: str
    current_version: str | None = Field(description="the version the alias routes to now (None: the alias is gone)")
    baseline_version: str
    current_code_sha256: str | None = None
    baseline_code_sha256: str | None = Field(default=None, description="the code hash recorded for baseline_version")
    baseline_version_code_sha256_now: str | None = Field(
        default=None, description="what Lambda reports for baseline_version now (None: that version no longer exists)"
    )
    refused: str | None = Field(default=None, description="why no rollback is proposed for this alias, when none is")


class AliasRestoreInfo(BaseModel):
    function_name: str
    drifted: bool = False
    baseline_captured_at: str | None = None
    aliases: list[AliasRestore] = Field(default_factory=list, description="aliases that route elsewhere than recorded")
    not_in_baseline: list[str] = Field(default_factory=list, description="aliases the baseline lacks (left alone)")
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def get_alias_restore_info(clients: AwsClients, lambda_name: str) -> AliasRestoreInfo:
    def compute(name: str, current: FunctionConfiguration, baseline: Baseline) -> AliasRestoreInfo:
        try:
            return _alias_restore_info(clients, name, current, baseline)
        except AWS_ERRORS as exc:
            return AliasRestoreInfo(function_name=name, error=describe_error(exc))

    return _lookup(AliasRestoreInfo, clients, lambda_name, compute)


def _alias_restore_info(
    clients: AwsClients, name: str, current: FunctionConfiguration, baseline: Baseline
) -> AliasRestoreInfo:
    now = {a.name: a for a in current.aliases}
    restores, actions = [], []
    for base in baseline.configuration.aliases:
        alias = now.get(base.name)
        if alias is not None and alias.function_version == base.function_version:
            continue
        restore = AliasRestore(
            alias_name=base.name,
            current_version=alias.function_version if alias else None,
            baseline_version=base.function_version,
            current_code_sha256=alias.code_sha256 if alias else None,
            baseline_code_sha256=base.code_sha256,
        )
        restores.append(restore)
        if alias is None:
            restore.refused = "the alias no longer exists: re-creating it is not an action the responder takes"
            continue
        restore.baseline_version_code_sha256_now = version_code_sha256(clients, name, base.function_version)
        if restore.baseline_version_code_sha256_now is None:
            restore.refused = f"baseline version {base.function_version} no longer exists: nothing to roll back to"
        elif base.code_sha256 is None or restore.baseline_version_code_sha256_now != base.code_sha256:
            # Same number, other code: the function was re-created since onboarding. Never route traffic there.
            restore.refused = (
                f"version {base.function_version}'s code hash is not the one the baseline recorded: "
                "it is not the code the function ran when it was onboarded"
            )
        if restore.refused:
            continue
        arn = f"{baseline.function_arn}:{base.name}" if baseline.function_arn else name
        actions.append(
            ProposedRollbackAlias(
                fault_type=FaultType.DEPLOYMENT_REGRESSION,
                action_type=ActionType.ROLLBACK_ALIAS,
                target_resource=arn,
                parameters=RollbackAliasParams(
                    function_name=name, alias_name=base.name, function_version=base.function_version
                ),
                reasoning=f"alias {base.name} routes to version {alias.function_version}; the baseline version is "
                f"{base.function_version} (same code hash as recorded)",
            )
        )
    recorded = {a.name for a in baseline.configuration.aliases}
    return AliasRestoreInfo(
        function_name=name,
        drifted=bool(restores),
        baseline_captured_at=baseline.captured_at,
        aliases=restores,
        not_in_baseline=sorted(set(now) - recorded),
        actions=actions,
    )
