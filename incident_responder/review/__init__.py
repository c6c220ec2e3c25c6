"""REVIEWING: the critic judges each proposed action, then the approval policy decides who approves.

review  the stage: run the critic, apply the policy floor, store the review
critic  the critic agent: its prompt, the lookups it is given, its terminal tool
policy  the approval policy: the deterministic floor under the critic's verdicts, automatic approval
errors  the stage's errors, by their ASL names
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "CRITIC",
    "PolicyDecision",
    "ProposalUnavailableError",
    "ReviewResult",
    "apply_review_policy",
    "critic_spec",
    "review_message",
    "run_review",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "critic": ["CRITIC", "critic_spec", "review_message"],
        "errors": ["ProposalUnavailableError"],
        "policy": ["PolicyDecision", "apply_review_policy"],
        "review": ["ReviewResult", "run_review"],
    },
)
