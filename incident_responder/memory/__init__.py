"""Memory: a function's past incidents, from the responder's own records, and what they change.

history   the ``history#<function_name>`` item: read (bounded, validated) and the recurrence of a fixed fault
record    an ended incident into its function's history (the report step; a write conditional on ``version``)
rules     what the history changes in the review's floor: rolled back or recurring -> a person; never relaxing

The item holds the function's last ended incidents (:class:`incident_responder.core.contracts.PastIncident`),
newest first, as JSON in ``entries_json``, with a ``version`` for conditional writes and ``expires_at`` (TTL).
Nothing here ever reads a model's prose, and nothing here can authorise a change: the guardrails decide.
"""

from incident_responder.core.exports import lazy_exports

_HISTORY = ["History", "fixed_then_back", "parsed_time", "past_incidents", "read_history"]
_RECORD = ["past_incident", "remember"]
_RULES = ["Memory", "MemoryFinding", "findings_for", "read_memory", "started_at"]
__all__ = [*_HISTORY, *_RECORD, *_RULES]
__getattr__ = lazy_exports(__name__, {"history": _HISTORY, "record": _RECORD, "rules": _RULES})
