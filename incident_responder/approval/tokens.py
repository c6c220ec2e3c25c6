"""AWAITING_APPROVAL: the task token, hashed in the record and base64url-encoded in a link.

The state machine waits on a task token; the record keeps only its hash, and a link carries it
base64url-encoded (task tokens hold any character).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

from incident_responder.approval.errors import MalformedApprovalRequestError

_TOKEN_B64 = re.compile(r"^[A-Za-z0-9_-]{1,8192}$")


def hash_token(task_token: str) -> str:
    return hashlib.sha256(task_token.encode("utf-8")).hexdigest()


def encode_token(task_token: str) -> str:
    """The task token as it travels in a link: base64url without padding (task tokens hold any character)."""
    return base64.urlsafe_b64encode(task_token.encode("utf-8")).decode("ascii").rstrip("=")


def decode_token(encoded: str) -> str:
    if not _TOKEN_B64.match(encoded or ""):
        raise MalformedApprovalRequestError("the link's token is not base64url text")
    try:
        return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise MalformedApprovalRequestError("the link's token does not decode") from None
