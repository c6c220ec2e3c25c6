"""AWAITING_APPROVAL: a person approves exactly the actions they were shown, once.

request    store the approval record and send the request with its approve and reject links
record     the approval record: what was shown, bound to the hashed token; pending records
tokens     the task token, hashed in the record and base64url-encoded in a link
decision   decide once (approval page or ``responder approve``): check, claim, tell Step Functions
page       the approval page: GET shows, POST decides; every refusal a page with its status
telemetry  the log lines and metrics the approval functions write
errors     each refusal of a decision, and the request the state machine passed that cannot be shown
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "ApprovalAlreadyUsedError",
    "ApprovalError",
    "ApprovalExpiredError",
    "ApprovalNoLongerPendingError",
    "ApprovalNotFoundError",
    "ApprovalRecord",
    "ApprovalTamperedError",
    "ApprovalUnavailableError",
    "InvalidApprovalRequestError",
    "MalformedApprovalRequestError",
    "NotAwaitingApprovalError",
    "check_decision",
    "decide",
    "handle_http",
    "load_approval_record",
    "pending_records",
    "request_approval",
    "task_token_from_history",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "decision": ["check_decision", "decide", "task_token_from_history"],
        "errors": [
            "ApprovalAlreadyUsedError",
            "ApprovalError",
            "ApprovalExpiredError",
            "ApprovalNoLongerPendingError",
            "ApprovalNotFoundError",
            "ApprovalTamperedError",
            "ApprovalUnavailableError",
            "InvalidApprovalRequestError",
            "MalformedApprovalRequestError",
            "NotAwaitingApprovalError",
        ],
        "page": ["handle_http"],
        "record": ["ApprovalRecord", "load_approval_record", "pending_records"],
        "request": ["request_approval"],
    },
)
