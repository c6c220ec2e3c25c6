"""Every stage: the errors the shared contracts raise, by the names the state machine's Retry and Catch use."""


class InvalidIncidentError(ValueError):
    """What the state machine passed is not an incident (an ASL error name: goes to ERROR, no retry)."""
