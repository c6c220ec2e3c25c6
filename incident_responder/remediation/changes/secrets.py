"""REMEDIATING and ROLLING_BACK: a secret's scheduled deletion cancelled; its undo schedules it again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import RestoreSecretParams
from incident_responder.core.encoding import iso
from incident_responder.remediation.changes.base import _Change, _code

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
