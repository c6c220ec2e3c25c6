"""Memory: a function's past incidents, from the responder's own records, and what they change.

history   the ``history#<function_name>`` item: read (bounded, validated) and the recurrence of a fixed fault

The item holds the function's last ended incidents (:class:`incident_responder.core.contracts.PastIncident`),
newest first, as JSON in ``entries_json``, with a ``version`` for conditional writes and ``expires_at`` (TTL).
Nothing here ever reads a model's prose, and nothing here can authorise a change: the guardrails decide.
"""

from incident_responder.core.exports import lazy_exports

__all__ = ["History", "fixed_then_back", "past_incidents", "read_history"]
__getattr__ = lazy_exports(__name__, {"history": __all__})
