"""rollback_alias: an alias pointed back at the version it routed to in the baseline.

Everything about it: its restore lookup (the remediation MCP tool), its change (capture, apply, undo), its
guardrail, where its difference shows and how verification judges it (:mod:`incident_responder.actions.base`).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError
from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline
from incident_responder.account.errors import AWS_ERRORS, describe_error
from incident_responder.account.state import FunctionConfiguration
from incident_responder.actions.base import Action, Restoration
from incident_responder.actions.change import _Change
from incident_responder.actions.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _lookup
from incident_responder.actions.targets import _alias_target_reason, _other_function
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    FaultType,
    ProposedAction,
    RollbackAliasParams,
    proposed,
)


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

    return _lookup(AliasRestoreInfo, clients, lambda_name, compute, RollbackAlias.sections)


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
            proposed(
                fault_type=FaultType.DEPLOYMENT_REGRESSION,
                action_type=ActionType.ROLLBACK_ALIAS,
                target_resource=arn,
                parameters=RollbackAliasParams(
                    function_name=name, alias_name=base.name, function_version=base.function_version
                ),
                reasoning=(
                    f"alias {base.name} routes to version {alias.function_version}"
                    if alias
                    else f"alias {base.name} was deleted: callers naming it get ResourceNotFoundException"
                )
                + f"; the baseline version is {base.function_version} (same code hash as recorded)",
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


# -- the change: capture, apply, undo ----------------------------------------------------------------


class _AliasVersion(_Change):
    """UpdateAlias FunctionVersion (weighted routing, which the baseline does not record, is left as it is); an alias
    deleted since the baseline is created again (CreateAlias), and its undo deletes what it created."""

    def resources(self, p: RollbackAliasParams) -> list[str]:
        return [f"alias:{p.function_name}:{p.alias_name}"]

    def satisfied(self, p: RollbackAliasParams, state: dict[str, Any]) -> bool:
        return bool(state["function_version"] == p.function_version)

    def capture(self, clients: AwsClients, p: RollbackAliasParams) -> dict[str, Any]:
        lam = clients.get("lambda")
        try:
            version = lam.get_alias(FunctionName=p.function_name, Name=p.alias_name)["FunctionVersion"]
        except lam.exceptions.ResourceNotFoundException:
            version = None  # deleted
        return {"function_name": p.function_name, "alias_name": p.alias_name, "function_version": version}

    def apply(self, clients: AwsClients, p: RollbackAliasParams) -> str:
        return self._point(clients, p, p.function_version)

    def restore(self, clients: AwsClients, p: RollbackAliasParams, prior: dict[str, Any]) -> None:
        self._point(clients, p, prior["function_version"])

    def _point(self, clients: AwsClients, p: RollbackAliasParams, version: str | None) -> str:
        what = f"alias {p.alias_name} of {p.function_name}"
        now = self.capture(clients, p)["function_version"]
        lam = clients.get("lambda")
        if now == version:
            return f"{what} already routes to version {version}" if version else f"{what} does not exist"
        if version is None:  # the undo of a re-creation: the alias did not exist
            lam.delete_alias(FunctionName=p.function_name, Name=p.alias_name)
            return f"deleted {what}"
        if now is None:
            lam.create_alias(FunctionName=p.function_name, Name=p.alias_name, FunctionVersion=version)
            return f"created {what} again at version {version}"
        lam.update_alias(FunctionName=p.function_name, Name=p.alias_name, FunctionVersion=version)
        return f"pointed {what} at version {version}"


# -- the guardrail ----------------------------------------------------------------------------------


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
    if p.function_version != base.function_version:
        return [
            f"version {p.function_version} is not alias {p.alias_name}'s baseline version {base.function_version}: "
            "anything else is not a restore"
        ]
    if now is not None and now.function_version == base.function_version:
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


# -- the action ------------------------------------------------------------------------------------


class RollbackAlias(Action):
    """An alias pointed back at the version it routed to in the baseline (still the same code), or created again at
    it when deleted since the baseline (catalogue entry function-not-found). Medium risk: it changes what runs."""

    action_type = ActionType.ROLLBACK_ALIAS
    risk = "medium"
    # CreateAlias re-creates an alias deleted since the baseline; DeleteAlias only undoes that re-creation.
    iam_writes = frozenset({"lambda:UpdateAlias", "lambda:CreateAlias", "lambda:DeleteAlias"})
    # The lookup's field that shows a fault already at the baseline (the offline critic's no-op check).
    no_drift = {
        FaultType.DEPLOYMENT_REGRESSION: ("drifted", "the alias already routes to the baseline version"),
    }
    lookup_tool = "get_alias_restore_info"
    sections = ("aliases",)
    lookup_model = AliasRestoreInfo
    lookup_description = (
        "Aliases routing to another version than recorded (or deleted since), with both versions' code hashes, and "
        "the rollback to the baseline version (refused when that version is gone or its code hash is not the "
        "recorded one)."
    )
    change = _AliasVersion()

    def lookup(self, clients, lambda_name):
        return get_alias_restore_info(clients, lambda_name)

    def guardrail(self, action, p, current, baseline, clients):
        return _alias_target_reason(action, p) + _check_alias(p, current, baseline, clients)

    def drift_paths(self, p, current):
        return [f"aliases.{p.alias_name}"]

    def verify(self, p, current, baseline):
        return Restoration(
            prefixes=[f"aliases.{p.alias_name}"]
        )  # the version it routes to and that version's code hash
