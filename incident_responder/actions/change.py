"""REMEDIATING and ROLLING_BACK: what every kind of change does, and how captured states compare.

Each action type has its change (one module each in this package): ``resources`` names what it changes (for
the leases), ``capture`` reads the live state of exactly that, ``satisfied`` tells whether that state is already
what the action leaves, ``apply`` changes it, ``restore`` puts a recorded prior state back.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from incident_responder.core.aws import AwsClients


def _now() -> datetime:
    return datetime.now(UTC)


def _code(exc: Exception) -> str | None:
    return exc.response.get("Error", {}).get("Code") if isinstance(exc, ClientError) else None


# -- what each action type changes, and how it is put back --------------------------------------------
# capture() reads the live state of exactly what the action changes, in a comparable shape: it is the
# prior state recorded before applying, and read again after an undo it must equal that record.
class _Change:
    def resources(self, p: Any) -> list[str]:
        """The resources the action changes, each leased (and fenced) before the first write: ``kind:id``."""
        raise NotImplementedError

    def satisfied(self, p: Any, state: dict[str, Any]) -> bool:
        """Is a captured state already what the action leaves? Then the step is already restored: nothing to write."""
        raise NotImplementedError

    def capture(self, clients: AwsClients, p: Any) -> dict[str, Any]:
        raise NotImplementedError

    def apply(self, clients: AwsClients, p: Any) -> str:
        raise NotImplementedError

    def restore(self, clients: AwsClients, p: Any, prior: dict[str, Any]) -> str | None:
        """Put ``prior`` back; may say how (the undo step's detail), else None."""
        raise NotImplementedError

    def comparable(self, state: dict[str, Any]) -> dict[str, Any]:
        """What of a captured state compare-and-swap compares (default: all of it). A capture may carry facts for
        the record that an undo cannot reproduce exactly (a secret's deletion date)."""
        return state
