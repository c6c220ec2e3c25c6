"""The hand-over's steps from the team's runbooks, as a careful model would copy them: each runbook's numbered or
bulleted steps, in order, bounded, citing it. A runbook only ever becomes hand-over text: never an action."""

from __future__ import annotations

import re
from typing import Any

from incident_responder.core.contracts.actions import MAX_HANDOVER_STEPS, RUNBOOK_CITATION

STEPS_PER_RUNBOOK = 6
STEP_CHARS = 300  # HandoverStep.text's bound
_STEP = re.compile(r"^\s{0,3}(?:\d{1,2}[.)]|[-*+])\s+(?P<text>\S.*)$")


def steps_of(text: str) -> list[str]:
    """The runbook's Markdown list items (numbered or bulleted), at most :data:`STEPS_PER_RUNBOOK`."""
    steps: list[str] = []
    for line in text.splitlines():
        m = _STEP.match(line)
        if m and len(steps) < STEPS_PER_RUNBOOK:
            step = " ".join(m.group("text").split())
            steps.append(step if len(step) <= STEP_CHARS else step[: STEP_CHARS - 1] + "…")
    return steps


def _faults_of(scope: str, unresolvable: list[str]) -> list[str]:
    """The faults a runbook speaks to: its catalogue entry's fault type, or every one for the function's own."""
    kind, _, name = scope.partition("/")
    if kind == "function":
        return unresolvable
    from incident_responder.catalogue.queries import MODES_BY_ID

    mode = MODES_BY_ID.get(name)
    return [mode.fault_type] if mode is not None and mode.fault_type in unresolvable else []


def runbook_steps(answer: dict[str, Any], unresolvable: list[str]) -> list[dict[str, Any]]:
    """Hand-over steps for the unresolvable faults from get_runbook's answer: the catalogue entries' runbooks
    first (the most specific), then the function's; each step cites its runbook."""
    runbooks = [r for r in answer.get("runbooks") or [] if isinstance(r, dict)]
    runbooks.sort(key=lambda r: str(r.get("scope", "")).startswith("function/"))
    handover: list[dict[str, Any]] = []
    for runbook in runbooks:
        citation = f"runbook:{runbook.get('scope')}@{runbook.get('digest')}"
        faults = _faults_of(str(runbook.get("scope", "")), unresolvable)
        if not faults or not re.match(RUNBOOK_CITATION, citation):
            continue
        for step in steps_of(str(runbook.get("text", ""))):
            handover.append({"fault_type": faults[0], "text": step, "runbook": citation})
    return handover[:MAX_HANDOVER_STEPS]
