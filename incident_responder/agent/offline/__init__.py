"""The offline model: a deterministic, rule-based LangChain chat model that needs no endpoint.

It is a real ``BaseChatModel`` (``bind_tools``, tool calls, usage metadata) and reads only what a
hosted model would read: the incident and the tool results in its message history, through the
tools it was bound to. It never sees injected faults except through tools. Split by job:

- :mod:`.observations` reads the message history (through the tags :mod:`..graph` writes);
- :mod:`.diagnosis` investigates as a careful SRE would: the symptom picks the first tools, what the
  logs report (by structure: :mod:`incident_responder.account.log_records`) picks the next, drift against the
  baseline is checked before concluding, and configuration outranks log text;
- :mod:`.proposal` copies the lookups' ready-made restores and says what a person should look at for
  the faults no action fixes;
- :mod:`.review` looks each action's fault up again and approves only an action the lookup would make
  itself, rejects one that changes nothing (already at the baseline), and leaves anything else to a person;
- :mod:`.model` is the chat-model adapter.

Each turn calls together every tool that what is known so far calls for (as a hosted model calls tools
that do not depend on each other in one turn), so no turn resends the prompt only to ask for one more
lookup. Token usage is estimated (4 characters a token) so budgets behave as they would with a real model.
"""

from incident_responder.agent.offline.diagnosis import build_diagnosis, next_diagnostic_tool, next_diagnostic_tools
from incident_responder.agent.offline.model import OfflineChatModel
from incident_responder.agent.offline.observations import Observations
from incident_responder.agent.offline.proposal import (
    LOOKUP_FOR_FAULT,
    build_proposal,
    next_remediation_tool,
    next_remediation_tools,
)
from incident_responder.agent.offline.review import (
    NO_DRIFT,
    build_review,
    judge_action,
    next_review_tool,
    next_review_tools,
)

__all__ = [
    "LOOKUP_FOR_FAULT",
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
