"""restore_secret: a secret's scheduled deletion cancelled.

Everything about it: its restore lookup (the remediation MCP tool), its change (capture, apply, undo), its
guardrail, where its difference shows and how verification judges it (:mod:`incident_responder.actions.base`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError
from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline
from incident_responder.account.state import FunctionConfiguration
from incident_responder.actions.base import Action, Restoration
from incident_responder.actions.change import _Change, _code
from incident_responder.actions.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _lookup
from incident_responder.actions.targets import _target_reason
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    FaultType,
    ProposedAction,
    RestoreSecretParams,
    proposed,
)
from incident_responder.core.encoding import iso


class SecretRestore(BaseModel):
    secret_arn: str
    variable: str = Field(description="the environment variable whose value names the secret")
    current_state: str = Field(
        description="scheduled_for_deletion, deleted (gone for good), not_named (the configuration no longer names "
        "it) or available"
    )
    deleted_date: str | None = Field(default=None, description="when Secrets Manager deletes it, while scheduled")
    baseline_state: str = Field(description="as the baseline recorded it: available, scheduled_for_deletion or deleted")
    refused: str | None = Field(default=None, description="why RestoreSecret is not proposed, when it is not")


class SecretRestoreInfo(BaseModel):
    function_name: str
    drifted: bool = False
    baseline_captured_at: str | None = None
    secrets: list[SecretRestore] = Field(
        default_factory=list, description="the secrets the function's environment names whose state differs"
    )
    not_in_baseline: list[str] = Field(
        default_factory=list, description="secrets the environment names that the baseline lacks (left alone)"
    )
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def _secret_state(secret: Any) -> str:
    if secret is None:
        return "not_named"
    if not secret.exists:
        return "deleted"
    return "scheduled_for_deletion" if secret.deleted_date else "available"


def get_secret_restore_info(clients: AwsClients, lambda_name: str) -> SecretRestoreInfo:
    return _lookup(SecretRestoreInfo, clients, lambda_name, _secret_restore_info, RestoreSecret.sections)


def _secret_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> SecretRestoreInfo:
    now = {s.secret_arn: s for s in current.secrets}
    restores, actions = [], []
    for base in baseline.configuration.secrets:
        secret = now.get(base.secret_arn)
        state, before = _secret_state(secret), _secret_state(base)
        if state == before:
            continue
        restore = SecretRestore(
            secret_arn=base.secret_arn,
            variable=base.variable,
            current_state=state,
            deleted_date=secret.deleted_date if secret else None,
            baseline_state=before,
        )
        restores.append(restore)
        if before != "available":
            restore.refused = (
                f"the baseline recorded it {before.replace('_', ' ')}: only a secret available then is restored"
            )
        elif state == "not_named":
            restore.refused = "the function's environment no longer names it: not a secret of this function to restore"
        elif state == "deleted":
            restore.refused = (
                "it no longer exists (deleted for good once its recovery window ended): RestoreSecret cannot bring it "
                "back; a person re-creates it and its value"
            )
        elif state == "scheduled_for_deletion":
            actions.append(
                proposed(
                    fault_type=FaultType.DEPENDENCY_MISSING,
                    action_type=ActionType.RESTORE_SECRET,
                    target_resource=base.secret_arn,
                    parameters=RestoreSecretParams(secret_arn=base.secret_arn),
                    reasoning=f"the secret {base.variable} names is scheduled for deletion (on {restore.deleted_date}); "
                    "the baseline recorded it available (its deletion may have been scheduled on purpose: a person "
                    "should confirm)",
                )
            )
    return SecretRestoreInfo(
        function_name=name,
        drifted=bool(restores),
        baseline_captured_at=baseline.captured_at,
        secrets=restores,
        not_in_baseline=sorted(set(now) - {s.secret_arn for s in baseline.configuration.secrets}),
        actions=actions,
    )


# -- the change: capture, apply, undo ----------------------------------------------------------------


# Secrets Manager's bounds on RecoveryWindowInDays.
SECRET_RECOVERY_DAYS = (7, 30)
# How far apart LastChangedDate and DeletedDate may be from a whole number of days and still be read as the
# DeleteSecret request and the window it gave (Secrets Manager stamps both from the one request).
_WINDOW_TOLERANCE = timedelta(minutes=2)


def _when(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        try:
            return _when(datetime.fromisoformat(value.replace("Z", "+00:00")))
        except ValueError:
            return None
    return None


def recovery_window_days(described: dict[str, Any]) -> int | None:
    """The RecoveryWindowInDays a scheduled deletion was requested with, when DescribeSecret tells it: DeletedDate
    (when it will be deleted) a whole number of days, within Secrets Manager's bounds, after LastChangedDate (the
    DeleteSecret request). None when it cannot be told (the secret changed otherwise since, or is not scheduled).

    >>> recovery_window_days({"DeletedDate": "2026-12-01T10:00:00Z", "LastChangedDate": "2026-11-21T10:00:00Z"})
    10
    >>> recovery_window_days({"DeletedDate": "2026-12-01T10:00:00Z", "LastChangedDate": "2026-11-01T08:00:00Z"})
    """
    deleted, changed = _when(described.get("DeletedDate")), _when(described.get("LastChangedDate"))
    if deleted is None or changed is None or deleted <= changed:
        return None
    days = round((deleted - changed) / timedelta(days=1))
    if not SECRET_RECOVERY_DAYS[0] <= days <= SECRET_RECOVERY_DAYS[1]:
        return None
    return days if abs(deleted - changed - timedelta(days=days)) <= _WINDOW_TOLERANCE else None


class _Secret(_Change):
    """RestoreSecret: cancel a scheduled deletion. Its undo schedules the deletion again (DeleteSecret), with the
    recovery window it had when that can be told, else Secrets Manager's minimum of 7 days; the ledger's prior
    state says which (``undo``). The new deletion date cannot be the recorded one: compare-and-swap compares
    whether the secret exists and is scheduled for deletion, not when."""

    COMPARED = ("secret_arn", "exists", "scheduled_for_deletion")

    def resources(self, p: RestoreSecretParams) -> list[str]:
        return [f"secret:{p.secret_arn}"]

    def satisfied(self, p: RestoreSecretParams, state: dict[str, Any]) -> bool:
        return bool(state["exists"] and not state["scheduled_for_deletion"])

    def capture(self, clients: AwsClients, p: RestoreSecretParams) -> dict[str, Any]:
        try:
            described = clients.get("secretsmanager").describe_secret(SecretId=p.secret_arn)
        except ClientError as exc:
            if _code(exc) != "ResourceNotFoundException":
                raise
            return {"secret_arn": p.secret_arn, "exists": False, "scheduled_for_deletion": False}
        deleted = _when(described.get("DeletedDate"))
        state: dict[str, Any] = {"secret_arn": p.secret_arn, "exists": True, "scheduled_for_deletion": bool(deleted)}
        if deleted is not None:
            window = recovery_window_days(described)
            state |= {
                "deletion_date": iso(deleted),
                "recovery_window_days": window,
                "undo": (
                    f"DeleteSecret RecoveryWindowInDays={window}: the window this deletion was scheduled with "
                    "(DeletedDate - LastChangedDate)"
                    if window is not None
                    else f"DeleteSecret RecoveryWindowInDays={SECRET_RECOVERY_DAYS[0]} (Secrets Manager's minimum): the "
                    f"window this deletion was scheduled with cannot be told from DescribeSecret, so the deletion is "
                    f"scheduled {SECRET_RECOVERY_DAYS[0]} days after the undo, not on {iso(deleted)}"
                ),
            }
        return state

    def comparable(self, state: dict[str, Any]) -> dict[str, Any]:
        return {k: state.get(k) for k in self.COMPARED}

    def apply(self, clients: AwsClients, p: RestoreSecretParams) -> str:
        state = self.capture(clients, p)
        if state["exists"] and not state["scheduled_for_deletion"]:
            return f"secret {p.secret_arn} is not scheduled for deletion (already restored)"
        clients.get("secretsmanager").restore_secret(SecretId=p.secret_arn)
        return f"cancelled the scheduled deletion of secret {p.secret_arn}"

    def restore(self, clients: AwsClients, p: RestoreSecretParams, prior: dict[str, Any]) -> str | None:
        live = self.capture(clients, p)
        if not prior.get("scheduled_for_deletion") or live["scheduled_for_deletion"] or not live["exists"]:
            return None  # nothing this undo can do; the read-back reports any difference
        window = prior.get("recovery_window_days") or SECRET_RECOVERY_DAYS[0]
        clients.get("secretsmanager").delete_secret(SecretId=p.secret_arn, RecoveryWindowInDays=window)
        how = "its recorded window" if prior.get("recovery_window_days") else "the minimum: its window was not known"
        return f"scheduled the deletion of secret {p.secret_arn} again, in {window} days ({how})"


# -- the guardrail ----------------------------------------------------------------------------------


def _check_secret(p: RestoreSecretParams, current: FunctionConfiguration, baseline: FunctionConfiguration) -> list[str]:
    recorded = {s.secret_arn: s for s in baseline.secrets}
    base = recorded.get(p.secret_arn)
    if base is None:
        known = ", ".join(sorted(recorded)) or "none"
        return [f"secret {p.secret_arn} is not one the function's environment named in the baseline ({known})"]
    if not base.exists or base.deleted_date is not None:
        return [f"secret {p.secret_arn} was not available in the baseline: only a secret available then is restored"]
    now = next((s for s in current.secrets if s.secret_arn == p.secret_arn), None)
    if now is None:
        return [f"the function's environment no longer names secret {p.secret_arn}"]
    if not now.exists:
        return [f"secret {p.secret_arn} no longer exists: RestoreSecret cannot bring back a deleted secret"]
    if now.deleted_date is None:
        return [f"secret {p.secret_arn} is not scheduled for deletion: nothing to restore"]
    return []


# -- the action ------------------------------------------------------------------------------------


class RestoreSecret(Action):
    """A secret's scheduled deletion cancelled. High risk, and always a person: someone may have scheduled it on
    purpose (a suspected compromise)."""

    action_type = ActionType.RESTORE_SECRET
    risk = "high"
    approval = "person"
    person_reason = "cancelling a secret's deletion needs a person: it may have been scheduled on purpose"
    iam_writes = frozenset({"secretsmanager:RestoreSecret", "secretsmanager:DeleteSecret"})
    # The lookup's field that shows a fault already at the baseline (the offline critic's no-op check).
    no_drift = {
        FaultType.DEPENDENCY_MISSING: (
            "drifted",
            "the secrets the environment names are already in their baseline state",
        ),
    }
    lookup_tool = "get_secret_restore_info"
    sections = ("secrets",)
    lookup_model = SecretRestoreInfo
    lookup_description = (
        "The Secrets Manager secrets the function's environment names whose state differs from the baseline, and "
        "RestoreSecret (cancel the scheduled deletion) for those recorded available and scheduled for deletion now "
        "(refused when a secret is gone for good or no longer named)."
    )
    change = _Secret()

    def lookup(self, clients, lambda_name):
        return get_secret_restore_info(clients, lambda_name)

    def guardrail(self, action, p, current, baseline, clients):
        return _target_reason(action, "the secret", "secret", [p.secret_arn]) + _check_secret(p, current, baseline)

    def drift_paths(self, p, current):
        return [f"secrets.{p.secret_arn}.deleted_date"]

    def verify(self, p, current, baseline):
        found = Restoration(targets=[f"secret {p.secret_arn}"])
        secret = next((s for s in current.secrets if s.secret_arn == p.secret_arn), None)
        if secret is None or not secret.exists or secret.deleted_date is not None:
            state = (
                "not named by the function's environment"
                if secret is None
                else "deleted"
                if not secret.exists
                else f"scheduled for deletion on {secret.deleted_date}"
            )
            found.problems.append(f"secret {p.secret_arn}: {state}")
        return found
