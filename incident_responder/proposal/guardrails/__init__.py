"""PROPOSING and REMEDIATING: deterministic guardrails on each proposed action, applied after the model.

policy             apply the guardrails to a proposal: risk and approval by policy, duplicates and rejections
checks             the checks one action must pass: home account, baseline restore, drift, the alarm's qualifier
targets            whether an action's target names what its parameters change, in the incident's function
access             restores of the role's policies, network egress, the KMS key and secrets
function_settings  restores of concurrency, timeout, memory, storage, an alias, a mapping and a queue
"""

from incident_responder.core.exports import lazy_exports

__all__ = ["apply_guardrails", "check_action", "drift_paths", "version_code_sha256"]
__getattr__ = lazy_exports(
    __name__,
    {
        "policy": ["apply_guardrails"],
        "checks": ["check_action", "drift_paths"],
        "function_settings": ["version_code_sha256"],
    },
)
