"""A review the lookups determine: the critic's model reviews only what a comparison leaves to it.

The critic approves an action that restores exactly what the lookup for its fault computes from the baseline,
and nothing more. Whether an action is that is a comparison, not a judgement: when every proposed action equals
one of its lookup's ready-made actions, each is approved with the lookup's value as its evidence, and no model
turn is taken. Any other proposal (an action the lookup would not make, a lookup that failed or found nothing to
restore) goes to the critic's model, which has the answers already. The approval policy applies either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from incident_responder.actions.equality import approval_of
from incident_responder.actions.registry import LOOKUP_FOR_FAULT


def determined_review(actions: Iterable[dict[str, Any]]) -> Callable[[list[dict[str, Any]]], dict[str, Any] | None]:
    """The critic's ``decide``: every action approved when each equals its lookup's own restore, else None."""
    proposed = list(actions)

    def decide(results: list[dict[str, Any]]) -> dict[str, Any] | None:
        answers = {e.get("tool"): e.get("result") for e in results if isinstance(e.get("result"), dict)}
        verdicts = []
        for action in proposed:
            tool = LOOKUP_FOR_FAULT.get(str(action.get("fault_type")))
            answer = answers.get(tool) if tool else None
            verdict = approval_of(action.get("execution_order"), tool, answer, action) if tool and answer else None
            if verdict is None:
                return None
            verdicts.append(verdict)
        if not verdicts:
            return None
        return {"verdicts": verdicts, "summary": f"{len(verdicts)} approve: each restores its lookup's own values"}

    return decide
