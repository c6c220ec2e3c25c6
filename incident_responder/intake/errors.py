"""INGEST: why an alert starts no incident, or not yet (each is a reason ingest gives, never a crash)."""

from __future__ import annotations

from incident_responder.intake.pending import CompositeAlarm, QueueAlarm


class MalformedAlertError(ValueError):
    """The alert cannot be turned into an incident; the message says what is wrong."""


class FunctionNotNamedError(MalformedAlertError):
    """A well-formed alarm on a queue, or a composite alarm: which function it concerns is for ingest to find in
    the account (:func:`incident_responder.intake.resolve.incident_from_alert`)."""

    def __init__(self, pending: QueueAlarm | CompositeAlarm):
        self.pending = pending
        if isinstance(pending, QueueAlarm):
            how = f"watches queue {pending.queue_name}; ingest resolves it through the onboarded functions' event source mappings"
        else:
            how = "is a composite alarm; ingest resolves it through its child alarms"
        super().__init__(f"alarm {pending.alarm.AlarmName!r} names no function: it {how}")


class AlertIgnoredError(Exception):
    """A well-formed notification that is no incident: an alarm's change into OK or INSUFFICIENT_DATA.
    Ingest logs it and counts it; it is not malformed, so it is never dead-lettered."""


class ForeignAlertError(MalformedAlertError):
    """An alarm of another account or Region than the stack's: its function is not one this stack can see."""


class UnresolvedAlertError(MalformedAlertError):
    """An alarm on a queue that no onboarded function reads, or that several do: it starts nothing."""
