"""One list of statuses: the enum is the ASL's status states, and each is either active or terminal."""

from __future__ import annotations

import json
import re
from pathlib import Path

from incident_responder.core.status import ACTIVE_STATUSES, TERMINAL_STATUSES, Status

ASL = Path(__file__).resolve().parents[2] / "statemachine" / "incident_lifecycle.asl.json"


def state_names(states: dict) -> set[str]:
    names = set(states)
    for state in states.values():
        for branch in state.get("Branches", []):
            names |= state_names(branch["States"])
        if "ItemProcessor" in state:
            names |= state_names(state["ItemProcessor"]["States"])
    return names


def test_the_enum_is_the_state_machines_status_states():
    asl = json.loads(ASL.read_text())
    statuses = {name for name in state_names(asl["States"]) if re.fullmatch(r"[A-Z_]+", name)}
    assert statuses == {s.value for s in Status}


def test_each_status_is_active_or_terminal_never_both():
    assert set(Status) == ACTIVE_STATUSES | TERMINAL_STATUSES
    assert not ACTIVE_STATUSES & TERMINAL_STATUSES
    assert Status.REMEDIATED in TERMINAL_STATUSES and Status.VERIFYING in ACTIVE_STATUSES


def test_a_status_is_its_stored_string():
    assert Status.ROLLED_BACK == "ROLLED_BACK" and json.dumps({"status": Status.ERROR}) == '{"status": "ERROR"}'
