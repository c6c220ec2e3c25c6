"""PROPOSING: the errors the proposal stage raises, by the names the state machine's Retry and Catch use."""


class DiagnosisUnavailableError(LookupError):
    """The diagnosis is neither inline nor in the store (an ASL error name: goes to PROPOSAL_FAILED)."""
