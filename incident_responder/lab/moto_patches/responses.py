"""SERVING the lab: an API action moto does not implement, answered as an AWS error instead of a traceback."""

from __future__ import annotations

import json
import logging
from typing import Any

logger = logging.getLogger("incident_responder.lab")

# moto has no Bedrock runtime: what to do instead, said to the caller that tried it.
ELSEWHERE = {
    "bedrock-runtime": "moto has no Bedrock runtime, so model calls leave the lab: set AWS_ENDPOINT_URL_BEDROCK_RUNTIME="
    "https://bedrock-runtime.<region>.amazonaws.com and your own credentials (BEDROCK_PROFILE) for this process, as "
    "`responder lab up --model bedrock_converse:...` does for the lab's functions; or use --model offline"
}


def _answer_unimplemented_actions() -> None:
    """moto raises NotImplementedError for an action it lacks: its server logs a traceback per attempt and answers an
    HTML 500, which botocore retries. Answered instead with 501 NotImplemented (not retried) and one log line."""
    from moto.core.responses import BaseResponse

    original = BaseResponse.call_action
    if getattr(original, "_lab_unimplemented", False):
        return

    def call_action(self: Any) -> Any:
        try:
            return original(self)
        except NotImplementedError as exc:
            service = str(getattr(self, "service_name", "") or "")
            message = f"the lab does not implement this {service} action ({exc})"
            if service in ELSEWHERE:
                message += f": {ELSEWHERE[service]}"
            logger.warning(message)
            body = json.dumps({"__type": "NotImplemented", "message": message, "Message": message})
            return 501, {"x-amzn-ErrorType": "NotImplemented", "Content-Type": "application/json"}, body

    call_action._lab_unimplemented = True  # type: ignore[attr-defined]
    BaseResponse.call_action = call_action  # type: ignore[method-assign]
