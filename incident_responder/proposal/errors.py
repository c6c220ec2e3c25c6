"""PROPOSING: the errors the proposal stage raises, by the names the state machine's Retry and Catch use."""

from incident_responder.core.errors import StateMachineError


class DiagnosisUnavailableError(StateMachineError, LookupError):
    """The diagnosis is neither inline nor in the store (an ASL error name: goes to PROPOSAL_FAILED)."""
