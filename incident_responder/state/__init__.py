"""Every lifecycle state: the incident-state and incident-context tables, and the executions they record.

lifecycle    the lifecycle as incident-state sees it: start an execution, reconcile and sweep, read an incident back
store        one stage's record per incident: a bounded DynamoDB item (incident-context) and the full record in S3
transcripts  an agent's transcript within the share of the item the store gives it
keys         the incident-state table's keys: its seven kinds of item, who writes each, when each expires
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "RecordStore",
    "TERMINAL_STATUSES",
    "get_incident_state",
    "load_record",
    "read_artifact",
    "reconcile_execution",
    "start_incident",
    "sweep_stuck",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "lifecycle": [
            "TERMINAL_STATUSES",
            "get_incident_state",
            "reconcile_execution",
            "start_incident",
            "sweep_stuck",
        ],
        "store": ["RecordStore", "load_record", "read_artifact"],
    },
)
