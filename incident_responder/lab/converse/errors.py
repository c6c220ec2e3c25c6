"""The model's side of the lab: the errors of the Converse endpoint and of its recordings."""

from __future__ import annotations


class ConverseError(Exception):
    """An answer that is an error, as Bedrock sends one: an HTTP status, an error type and a message."""

    def __init__(self, status: int, error_type: str, message: str):
        super().__init__(message)
        self.status, self.error_type, self.message = status, error_type, message


class CassetteError(Exception):
    """A recording that cannot be made or replayed: no such folder, a scenario without its cassette, a file that is
    not one, cassettes of different models; said before any lab starts."""
