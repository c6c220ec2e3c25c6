"""PROPOSING and REMEDIATING: deterministic guardrails on each proposed action, applied after the model.

policy             apply the guardrails to a proposal: risk and approval by policy, duplicates and rejections
checks             the checks one action must pass: home account, its action type's own guardrail (restores exactly
                   the baseline: incident_responder.actions), drift, the alarm's qualifier
"""

from incident_responder.core.exports import lazy_exports

__all__ = ["apply_guardrails", "check_action", "drift_paths"]
__getattr__ = lazy_exports(
    __name__,
    {
        "policy": ["apply_guardrails"],
        "checks": ["check_action", "drift_paths"],
    },
)
