"""REMEDIATING, ROLLING_BACK and VERIFYING: the errors that refuse an event, each a state machine error.

Each is raised before anything changes; the state machine catches it by its class name (or, for
InvalidVerificationInputError, by Verify fix's catch-all).
"""

from __future__ import annotations

from incident_responder.core.errors import StateMachineError


class InvalidRemediationInputError(StateMachineError, ValueError):
    """The event is not what the state machine should pass (malformed actions, approval, operation)."""


class ApprovalMismatchError(StateMachineError, ValueError):
    """The actions are not the ones approved (digest differs) or the decision is not "approve": nothing applied."""


class LedgerConflictError(StateMachineError, RuntimeError):
    """The incident's ledger holds other actions, or actions already rolled back: nothing applied."""


class ResourceLeaseHeldError(StateMachineError, RuntimeError):
    """Another live incident holds the lease of a resource these actions change: nothing was applied (the state
    machine waits, then hands over)."""


class InvalidVerificationInputError(StateMachineError, ValueError):
    """What the state machine passed cannot be verified (no retry: Verify fix's catch-all rolls back)."""


class HealthNotYetKnownError(StateMachineError, RuntimeError):
    """CloudWatch has not yet reported a whole minute after the change: the fix is neither healthy nor unhealthy yet
    (the state machine waits and verifies again)."""
