"""How AWS Lambda fails, as AWS documents it (read when diagnosing): one entry per failure mode, with its strings.

failure_mode      an entry's shape (FailureMode, Signature), the page's sections (AREAS), the AWS pages cited
invocation        invocation and permissions
concurrency       concurrency and throttling
configuration     configuration and limits
networking        networking (VPC)
kms               encryption of environment variables (KMS)
event_sources     event source mappings
async_invocation  asynchronous invocation and recursion
deployment        deployment, code and runtime
mounts            file systems and SnapStart
queries           every entry in the page's order (FAILURE_MODES), and the queries the responder makes of it

Each entry says what the operator sees (AWS's own strings, quoted exactly as printed), where it shows, what
causes it, what AWS says fixes it, and what this responder does with it: diagnoses and fixes it, diagnoses it
and hands it to a person with what to do, or does not diagnose it yet. The strings were checked against the
pages each entry cites. The log reader's tables of error codes (``log_records``) are derived from the
signatures here, and ``docs/failure-catalogue.md`` is rendered from this list (``scripts/catalogue.py``).

Pure data, read at cold start: no imports beyond the standard library, no checks at import (the tests check
the list: ids unique, one category per string, actions that fit their fault types).
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "AREAS",
    "FAILURE_MODES",
    "MODES_BY_ID",
    "FailureMode",
    "Responder",
    "Signature",
    "SignatureKind",
    "counts",
    "failure_mode_of",
    "modes_by_fault_type",
    "signature_categories",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "failure_mode": ["AREAS", "FailureMode", "Responder", "Signature", "SignatureKind"],
        "queries": [
            "FAILURE_MODES",
            "MODES_BY_ID",
            "counts",
            "failure_mode_of",
            "modes_by_fault_type",
            "signature_categories",
        ],
    },
)
