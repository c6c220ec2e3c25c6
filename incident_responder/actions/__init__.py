"""The action types, one module each with everything about it: the seam a new way of fixing a fault plugs into.

base                           what every action type is made of (an abstract base: facts, lookup, guardrail,
                               where its difference shows, verification, change)
registry                       every action type, and the tables derived from them (risk, approval, lookup tools)
change                         what every change does (capture, apply, restore) and how captured states compare
lookup                         how every restore lookup runs: read the function and its baseline, compare, offer
targets                        whether an action's target names what its parameters change, in the incident's function
iam                            restore_iam_policy
concurrency                    update_concurrency
network                        restore_network_egress
function_configuration         update_function_configuration
alias                          rollback_alias
kms                            enable_kms_key
event_source_mapping           enable_event_source_mapping
secret                         restore_secret
queue                          restore_queue_attributes
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "ACCESS_ACTIONS",
    "ACTIONS",
    "CHANGES",
    "Action",
    "LOOKUP_FOR_FAULT",
    "PERSON_ONLY_ACTIONS",
    "REMEDIATION_TOOLS",
    "RISK_FOR_ACTION",
    "Restoration",
    "lookups_for",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "base": ["Action", "Restoration"],
        "registry": [
            "ACCESS_ACTIONS",
            "ACTIONS",
            "CHANGES",
            "LOOKUP_FOR_FAULT",
            "PERSON_ONLY_ACTIONS",
            "REMEDIATION_TOOLS",
            "RISK_FOR_ACTION",
            "lookups_for",
        ],
    },
)
