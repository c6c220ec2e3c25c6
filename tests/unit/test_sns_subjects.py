"""SNS refuses a subject of 100 characters or more ("less than 100 characters long", the Publish API): every
subject the state machine or a handler sends is cut below that, whatever the function name and incident id."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonata
import pytest

from incident_responder.notify.notifications import SUBJECT_LIMIT, subject_line

ASL = json.loads((Path(__file__).parents[2] / "statemachine" / "incident_lifecycle.asl.json").read_text())
SNS_LIMIT = 99  # "less than 100 characters"
LONGEST_NAME = "f" * 64  # Lambda's longest function name
LONGEST_ID = "i" * 80  # an incident id is its execution's name: at most 80 characters


def subjects() -> dict[str, str]:
    return {
        name: state["Arguments"]["Subject"]
        for name, state in ASL["States"].items()
        if state.get("Resource") == "arn:aws:states:::sns:publish" and "Subject" in state.get("Arguments", {})
    }


@pytest.mark.parametrize("state", sorted(subjects()))
def test_every_subject_the_state_machine_sends_is_shorter_than_snss_limit(state):
    expression = re.fullmatch(r"\{% (.*) %\}", subjects()[state], re.S).group(1)
    bindings = {
        "incident": {"function_name": LONGEST_NAME, "incident_id": LONGEST_ID},
        "proposal": {"notification": {"subject": subject_line("s" * 300)}},
    }
    subject = jsonata.Jsonata(expression).evaluate(None, bindings)
    assert 0 < len(subject) <= SNS_LIMIT, f"{state}: {len(subject)} characters"


def test_subjects_made_in_code_are_shorter_than_snss_limit():
    assert SUBJECT_LIMIT == SNS_LIMIT
    assert len(subject_line("s" * 300)) == SNS_LIMIT
    assert subject_line("s" * SNS_LIMIT) == "s" * SNS_LIMIT


def test_the_operators_alarm_subject_is_shorter_than_snss_limit():
    from incident_responder.remediation.handover import alarm_subject

    assert len(alarm_subject(LONGEST_NAME, LONGEST_ID)) <= SNS_LIMIT
