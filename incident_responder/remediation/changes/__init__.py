"""REMEDIATING and ROLLING_BACK: each kind of change an action makes, how its prior state is read and put back.

base                    what every change does (capture, apply, restore, comparable); how states compare
registry                the change each action type makes (CHANGES), and the prior state it records
iam                     an IAM role's inline policy put back, or a managed policy attached again
concurrency             a function's reserved concurrency
function_configuration  a function's timeout, memory size or ephemeral storage
network                 a security group's egress grants, network ACL entries
alias                   an alias pointed back at a version
kms                     a KMS key enabled again
event_source_mappings   an event source mapping enabled again
secrets                 a secret's scheduled deletion cancelled
queues                  the visibility timeout of a queue the function reads
"""

from incident_responder.core.exports import lazy_exports

__all__ = ["CHANGES", "capture_prior", "egress_grants", "recovery_window_days"]
__getattr__ = lazy_exports(
    __name__,
    {
        "network": ["egress_grants"],
        "registry": ["CHANGES", "capture_prior"],
        "secrets": ["recovery_window_days"],
    },
)
