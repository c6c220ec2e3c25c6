"""An incident's status: the state machine's status states, by the names the ASL, DynamoDB and the docs use.

The ``incident-state`` item's ``status`` attribute holds one of these; the ASL writes each as it enters the
state of the same name (tests/unit/test_status.py keeps the two lists equal).
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    RECEIVED = "RECEIVED"
    SUPPRESSED = "SUPPRESSED"  # ingest found the function's incident already open or its budget spent
    INVESTIGATING = "INVESTIGATING"
    DIAGNOSED = "DIAGNOSED"
    FAILED = "FAILED"
    ERROR = "ERROR"
    PROPOSING = "PROPOSING"
    PROPOSAL_READY = "PROPOSAL_READY"
    PROPOSAL_FAILED = "PROPOSAL_FAILED"
    REVIEWING = "REVIEWING"
    AWAITING_APPROVAL = "AWAITING_APPROVAL"
    REJECTED = "REJECTED"
    APPROVAL_EXPIRED = "APPROVAL_EXPIRED"
    REMEDIATING = "REMEDIATING"
    VERIFYING = "VERIFYING"
    REMEDIATED = "REMEDIATED"
    ROLLING_BACK = "ROLLING_BACK"
    ROLLED_BACK = "ROLLED_BACK"
    REMEDIATION_FAILED = "REMEDIATION_FAILED"


# Statuses an execution ends in. Anything else at the end of an execution means it died mid-way.
TERMINAL_STATUSES = frozenset(
    {
        Status.PROPOSAL_READY,
        Status.FAILED,
        Status.ERROR,
        Status.PROPOSAL_FAILED,
        Status.SUPPRESSED,
        Status.REMEDIATED,
        Status.REJECTED,
        Status.APPROVAL_EXPIRED,
        Status.ROLLED_BACK,
        Status.REMEDIATION_FAILED,
    }
)
ACTIVE_STATUSES = frozenset(Status) - TERMINAL_STATUSES
# An execution that dies here may have changed the account: a person must look (REMEDIATION_FAILED), not FAILED.
ACTING_STATUSES = frozenset({Status.REMEDIATING, Status.VERIFYING, Status.ROLLING_BACK})
