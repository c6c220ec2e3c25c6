"""INVOKING a handler in the lab: the ``context`` a Python Lambda handler is given, for in-process calls."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field


@dataclass
class LambdaContext:
    """What a Python Lambda handler's ``context`` offers, for in-process calls."""

    function_name: str
    timeout_seconds: int = 900
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    invoked_function_arn: str = ""
    _deadline: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_seconds
        if not self.invoked_function_arn:
            self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))
