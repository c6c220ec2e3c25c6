"""PROPOSING and REVIEWING: read-only lookups that compute restore parameters from a function's recorded baseline.

Behind the remediation MCP server (``mcp/remediation/server.py``). Nothing here changes the account: each lookup
compares the current configuration with the baseline and returns the exact restores as ready-made ``actions``.

lookup           how every lookup runs: read the function and its baseline, compare, offer what vetting allows
iam              inline and managed policies the role lost
concurrency      reserved concurrency
network          security-group egress rules lost and NACL entries added
function_config  timeout, memory and ephemeral storage
alias            an alias routed elsewhere than recorded, and its rollback
kms              the state of the key encrypting the environment
event_sources    the state of the function's event source mappings
secrets          the secrets the environment names, scheduled for deletion
queues           the visibility timeout of the queues the mappings read
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "AliasRestoreInfo",
    "ConcurrencyRestoreInfo",
    "EventSourceRestoreInfo",
    "FunctionConfigRestoreInfo",
    "IamRestoreInfo",
    "KmsRestoreInfo",
    "NetworkRestoreInfo",
    "QueueRestoreInfo",
    "SecretRestoreInfo",
    "get_alias_restore_info",
    "get_concurrency_restore_info",
    "get_event_source_restore_info",
    "get_function_config_restore_info",
    "get_iam_restore_info",
    "get_kms_restore_info",
    "get_network_restore_info",
    "get_queue_restore_info",
    "get_secret_restore_info",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "alias": ["AliasRestoreInfo", "get_alias_restore_info"],
        "concurrency": ["ConcurrencyRestoreInfo", "get_concurrency_restore_info"],
        "event_sources": ["EventSourceRestoreInfo", "get_event_source_restore_info"],
        "function_config": ["FunctionConfigRestoreInfo", "get_function_config_restore_info"],
        "iam": ["IamRestoreInfo", "get_iam_restore_info"],
        "kms": ["KmsRestoreInfo", "get_kms_restore_info"],
        "network": ["NetworkRestoreInfo", "get_network_restore_info"],
        "queues": ["QueueRestoreInfo", "get_queue_restore_info"],
        "secrets": ["SecretRestoreInfo", "get_secret_restore_info"],
    },
)
