"""AWAITING_APPROVAL: each refusal of a decision has its own class (and HTTP status on the approval page).

``InvalidApprovalRequestError`` is an ASL error name: what the state machine passed cannot be shown to a person.
"""

from __future__ import annotations

from incident_responder.core.errors import StateMachineError


class ApprovalError(Exception):
    """A decision that cannot be made; the message says why, for the person who tried."""

    status = 400
    title = "This request cannot be used"


class MalformedApprovalRequestError(ApprovalError):
    status = 400
    title = "This link is incomplete or malformed"


class ApprovalNotFoundError(ApprovalError):
    status = 404
    title = "No such approval request"


class ApprovalTamperedError(ApprovalError):
    """The link's token or digest is not the record's: altered, or replaced by a newer request."""

    status = 403
    title = "This link does not match the approval request"


class ApprovalExpiredError(ApprovalError):
    status = 410
    title = "This approval request has expired"


class ApprovalNoLongerPendingError(ApprovalError):
    """Step Functions no longer waits on the token (timed out, answered, or the execution ended)."""

    status = 410
    title = "This approval request has expired or was already answered"


class ApprovalAlreadyUsedError(ApprovalError):
    status = 409
    title = "This approval request was already decided"


class NotAwaitingApprovalError(ApprovalError):
    """The incident exists but is not waiting for a person (``responder approve``)."""

    status = 409
    title = "This incident is not awaiting approval"


class InvalidApprovalRequestError(StateMachineError, ValueError):
    """What the state machine passed cannot be shown to a person (an ASL error name: goes to ERROR)."""


class ApprovalUnavailableError(ApprovalError):
    """AWS could not be reached or refused (the page's 503): nothing was decided, the link still works."""

    status = 503
    title = "The decision could not be recorded right now"
