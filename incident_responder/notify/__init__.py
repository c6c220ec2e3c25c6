"""PROPOSAL_READY, AWAITING_APPROVAL and every end: what operators are told, by email (SNS) and in chat.

notifications  the operator notification for PROPOSAL_READY, from validated fields; untrusted text quoted, inert
chat           messages for a chat channel (Amazon Q Developer): an incident waits for a person, an incident ended
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "Notification",
    "awaiting_approval",
    "incident_ended",
    "inert",
    "proposal_notification",
    "quote",
    "seen_before_line",
    "subject_line",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "notifications": [
            "Notification",
            "inert",
            "proposal_notification",
            "quote",
            "seen_before_line",
            "subject_line",
        ],
        "chat": ["awaiting_approval", "incident_ended"],
    },
)
