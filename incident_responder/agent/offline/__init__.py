"""The offline model (investigation, proposal, review): a deterministic, rule-based chat model, no endpoint.

observations      what the message history says (read through the tags of :mod:`..protocol`)
diagnostic_tools  which diagnostic tools a careful SRE calls next
findings          the evidence, faults and gaps a diagnosis accumulates
drift             the faults configuration drift against the baseline shows
network_drift     the function's VpcConfig moved (to ids that no longer exist, to subnets with no route out)
symptoms          the faults metrics, environment changes, configuration and logs show
reported          what AWS reports to others than the logs: a mapping's state, an invoke error the caller saw
diagnosis         what the findings add up to: the diagnosis submitted
proposal          the lookups' ready-made restores, and what a person looks at for the rest
review            each action judged against its fault's lookup
model             the chat-model adapter: a turn is the policies' next step

It is a real ``BaseChatModel`` (``bind_tools``, tool calls, usage metadata) and reads only what a
hosted model would read: the incident and the tool results in its message history, through the
tools it was bound to. It never sees injected faults except through tools. It depends on the agents only
through :mod:`incident_responder.agent.protocol` (tag and tool names). The diagnosis investigates as a
careful SRE would: the symptom picks the first tools, what the logs report (by structure:
:mod:`incident_responder.account.log_records`) picks the next, drift against the baseline is checked before
concluding, and configuration outranks log text. The proposal copies the lookups' ready-made restores and
says what a person should look at for the faults no action fixes. The review looks each action's fault up
again and approves only an action the lookup would make itself, rejects one that changes nothing (already at
the baseline), and leaves anything else to a person.

Each turn calls together every tool that what is known so far calls for (as a hosted model calls tools
that do not depend on each other in one turn), so no turn resends the prompt only to ask for one more
lookup. Token usage is estimated (4 characters a token) so budgets behave as they would with a real model.
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "NO_DRIFT",
    "OfflineChatModel",
    "Observations",
    "build_diagnosis",
    "build_proposal",
    "build_review",
    "judge_action",
    "next_diagnostic_tool",
    "next_diagnostic_tools",
    "next_remediation_tool",
    "next_remediation_tools",
    "next_review_tool",
    "next_review_tools",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "diagnosis": ["build_diagnosis"],
        "diagnostic_tools": ["next_diagnostic_tool", "next_diagnostic_tools"],
        "model": ["OfflineChatModel"],
        "observations": ["Observations"],
        "proposal": ["build_proposal", "next_remediation_tool", "next_remediation_tools"],
        "review": ["NO_DRIFT", "build_review", "judge_action", "next_review_tool", "next_review_tools"],
    },
)
