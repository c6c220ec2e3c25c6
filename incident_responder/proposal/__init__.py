"""PROPOSING: from a verified diagnosis to stored, guardrail-checked remediation actions (nothing is changed).

propose     the stage: run the proposer, apply the guardrails, store the proposal
proposer    the proposer agent: its prompt, the lookups it is given, its terminal tool
(the guardrails applied after the model: incident_responder.guardrails; the lookups the proposer is given and
what each action type restores: incident_responder.actions)
errors      the stage's errors, by their ASL names
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "DiagnosisUnavailableError",
    "ProposalResult",
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
        "propose": ["ProposalResult", "diagnosis_for", "run_proposal"],
        "proposer": ["lookups_for", "proposal_message", "proposer_spec"],
    },
)
