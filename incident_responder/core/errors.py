"""Every stage: the errors the shared contracts raise, by the names the state machine's Retry and Catch use.

A Lambda function that raises reports the exception's class name as the error name Step Functions matches,
so each class meant to reach the state machine inherits :class:`StateMachineError`; ``tests/unit/
test_asl_errors.py`` keeps those classes and the ASL's ``ErrorEquals`` names in step.
"""


class StateMachineError(Exception):
    """Its class name is an ASL error name a Retry or Catch may match (a Lambda task reports the class name)."""


class InvalidIncidentError(StateMachineError, ValueError):
    """What the state machine passed is not an incident (an ASL error name: goes to ERROR, no retry)."""
