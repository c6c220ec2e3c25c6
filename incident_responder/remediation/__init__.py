"""REMEDIATING, ROLLING_BACK and VERIFYING: apply approved actions, record how to undo each, undo them, check them.

remediate  apply the approved actions in order (the apply driver); roll them back (the rollback driver); release
results    what applying and undoing did, step by step
changes    one module per kind of change: what it reads, changes and puts back
ledger     the undo ledger: the prior state recorded before each step, and how far the step got
lease      one incident at a time per resource it changes, fenced: leases with fencing tokens
verify     is what the actions changed back at the baseline, and is the function healthy again?
health     how the function behaved since the apply (the health probes)
telemetry  the log lines and metrics the remediate and verify functions write about their results
errors     the errors that refuse an event (ASL error names)
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "ApplyResult",
    "ApprovalMismatchError",
    "ResourceLeaseHeldError",
    "HealthReport",
    "InvalidRemediationInputError",
    "InvalidVerificationInputError",
    "Ledger",
    "LedgerConflictError",
    "RollbackResult",
    "VerifyResult",
    "apply",
    "burst_probe",
    "release",
    "rollback",
    "set_health_probe",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "errors": [
            "ApprovalMismatchError",
            "ResourceLeaseHeldError",
            "InvalidRemediationInputError",
            "InvalidVerificationInputError",
            "LedgerConflictError",
        ],
        "health": ["HealthReport", "burst_probe", "set_health_probe"],
        "ledger": ["Ledger"],
        "remediate": ["apply", "release", "rollback"],
        "results": ["ApplyResult", "RollbackResult"],
        "verify": ["VerifyResult"],
    },
)
