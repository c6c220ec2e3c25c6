"""A proposal the lookups determine: no model turn where the restore is already computed.

Each remediation lookup compares the function with its recorded baseline and answers with ready-made actions.
When every diagnosed fault has an automated remedy and its lookup answered with an action for it, the proposal
is those actions, copied: a model would only copy them too. Any other diagnosis (a fault a person takes over, a
lookup that failed or found nothing to restore) goes to the proposer model, which has the answers already.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from incident_responder.actions.registry import LOOKUP_FOR_FAULT, ready_actions
from incident_responder.core.contracts import UNRESOLVABLE_FAULTS


def determined_proposal(faults: Iterable[Any]) -> Callable[[list[dict[str, Any]]], dict[str, Any] | None]:
    """The proposer's ``decide``: the submission the lookups' answers make for these diagnosed faults, or None."""
    diagnosed = [str(f) for f in faults]

    def decide(results: list[dict[str, Any]]) -> dict[str, Any] | None:
        if not diagnosed or any(f in UNRESOLVABLE_FAULTS or f not in LOOKUP_FOR_FAULT for f in diagnosed):
            return None
        actions = ready_actions(diagnosed, results)
        if {a["fault_type"] for a in actions} != set(diagnosed):
            return None
        return {
            "actions": actions,
            "confidence": "high",
            "chain_of_thought": "; ".join(str(a.get("reasoning") or "") for a in actions),
            "unresolvable_faults": [],
        }

    return decide
