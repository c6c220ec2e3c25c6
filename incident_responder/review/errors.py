"""REVIEWING: the errors the review stage raises, by the names the state machine's Retry and Catch use."""

from incident_responder.core.errors import StateMachineError


class ProposalUnavailableError(StateMachineError, LookupError):
    """The proposal is neither inline nor in the store (an ASL error name)."""
