"""REMEDIATING, ROLLING_BACK and VERIFYING: the errors that refuse an event, each an ASL error name.

Each is raised before anything changes; the state machine catches it by its class name.
"""

from __future__ import annotations


class InvalidRemediationInputError(ValueError):
    """The event is not what the state machine should pass (malformed actions, approval, operation)."""


class ApprovalMismatchError(ValueError):
    """The actions are not the ones approved (digest differs) or the decision is not "approve": nothing applied."""


class LedgerConflictError(RuntimeError):
    """The incident's ledger holds other actions, or actions already rolled back: nothing applied."""


class FunctionLeaseHeldError(RuntimeError):
    """Another incident is remediating this function: nothing was applied (the state machine waits, then hands over)."""


class InvalidVerificationInputError(ValueError):
    """What the state machine passed cannot be verified (an ASL error name: no retry)."""
