"""INVESTIGATING: the diagnostics tools, and the investigator agent that uses them to diagnose an incident.

investigate   the stage: one investigation, from an Incident to a stored, verified Diagnosis
investigator  the investigator agent: its prompt and the incident as it is shown
diagnostics   the read-only diagnostics tools as plain functions returning pydantic results
incident_history  get_incident_history: the function's past incidents (memory), bounded and validated
arguments     what the MCP tools take: validated types with the JSON schema a model is shown
telemetry     the log lines and metrics an investigation's result leaves behind
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "ConfigDrift",
    "DiagnosisSummary",
    "EventSourceMappingInfo",
    "Hours",
    "IamState",
    "IncidentHistory",
    "InvestigationMetrics",
    "InvestigationResult",
    "LambdaConfig",
    "LambdaName",
    "LambdaVpcConfig",
    "LogEvent",
    "Minutes",
    "NetworkConfig",
    "Qualifier",
    "RecentLogs",
    "fold_events",
    "get_config_drift",
    "get_dependencies",
    "get_function_metrics",
    "get_iam_state",
    "get_incident_history",
    "get_lambda_config",
    "get_network_config",
    "get_recent_changes",
    "get_recent_logs",
    "incident_blocks",
    "incident_message",
    "record_investigation",
    "run_investigation",
    "summarize",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "investigate": [
            "DiagnosisSummary",
            "InvestigationMetrics",
            "InvestigationResult",
            "run_investigation",
            "summarize",
        ],
        "investigator": ["incident_blocks", "incident_message"],
        "diagnostics": [
            "ConfigDrift",
            "EventSourceMappingInfo",
            "IamState",
            "LambdaConfig",
            "LambdaVpcConfig",
            "LogEvent",
            "NetworkConfig",
            "RecentLogs",
            "fold_events",
            "get_config_drift",
            "get_dependencies",
            "get_function_metrics",
            "get_iam_state",
            "get_lambda_config",
            "get_network_config",
            "get_recent_changes",
            "get_recent_logs",
        ],
        "incident_history": ["IncidentHistory", "get_incident_history"],
        "arguments": ["Hours", "LambdaName", "Minutes", "Qualifier"],
        "telemetry": ["record_investigation"],
    },
)
