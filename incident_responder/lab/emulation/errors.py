"""EMULATING a workload: how a handler's steps end early: what its code raised, or the sandbox killed."""

from __future__ import annotations

from incident_responder.lab.runtimes import RaisedError


class Failure(Exception):
    def __init__(self, error: RaisedError):
        super().__init__(error.error_type)
        self.error = error


class Killed(Exception):
    """The function used more memory than it has: the sandbox is killed."""
