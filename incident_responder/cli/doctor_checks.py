"""What every ``responder doctor`` check returns: a status, what was found, and the fix when it failed."""

from __future__ import annotations

from dataclasses import dataclass

from botocore.exceptions import ClientError

PASS, FAIL, WARN, SKIP = "ok", "FAIL", "warn", "skip"


@dataclass
class Check:
    status: str
    name: str
    detail: str
    fix: str = ""

    def line(self) -> str:
        text = f"[{self.status:>4}] {self.name}: {self.detail}"
        return text + (f"\n       fix: {self.fix}" if self.fix else "")


def describe_error(exc: Exception) -> str:
    """One line: an AWS error's code and message, any other exception's class and text."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return f"{error.get('Code')}: {error.get('Message')}"
    return f"{type(exc).__name__}: {exc}"
