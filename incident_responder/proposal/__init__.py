"""PROPOSING: from a verified diagnosis to stored, guardrail-checked remediation actions (nothing is changed).

propose     the stage: run the proposer, apply the guardrails, store the proposal
proposer    the proposer agent: its prompt, the lookups it is given, its terminal tool
guardrails  deterministic checks on each proposed action, applied after the model (a package)
lookups     read-only lookups that compute restore parameters from the baseline (a package)
errors      the stage's errors, by their ASL names
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "DiagnosisUnavailableError",
    "ProposalResult",
    "apply_guardrails",
    "diagnosis_for",
    "lookups_for",
    "proposal_message",
    "proposer_spec",
    "run_proposal",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "errors": ["DiagnosisUnavailableError"],
        "guardrails.policy": ["apply_guardrails"],
        "propose": ["ProposalResult", "diagnosis_for", "run_proposal"],
        "proposer": ["lookups_for", "proposal_message", "proposer_spec"],
    },
)
