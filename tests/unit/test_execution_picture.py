"""The execution picture's geometry, on the real lifecycle ASL: no drawn edge, and above all no edge of the
path taken, passes through a state's box; markers, legend, durations and colours where a person looks."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from incident_responder.reporting.picture import render_svg, state_times

ASL = json.loads((Path(__file__).parents[2] / "statemachine" / "incident_lifecycle.asl.json").read_text())
NS = {"s": "http://www.w3.org/2000/svg"}
START = ["RECEIVED", "Function budget", "Account budget", "INVESTIGATING", "Run investigator agent", "Diagnosis found?"]
PROPOSED = [*START, "DIAGNOSED", "PROPOSING", "Run proposer agent", "Proposal ready?", "PROPOSAL_READY"]
PATHS = {
    "remediated": [
        *PROPOSED,
        *("Notify operators", "Closed loop?", "REVIEWING", "Run critic agent", "Review outcome?"),
        *("AWAITING_APPROVAL", "Wait for approval", "Approval matches?", "REMEDIATING", "Apply actions", "Applied?"),
        *(
            "VERIFYING",
            "Settle",
            "Verify fix",
            "Fixed?",
            "REMEDIATED",
            "Free the resources",
            "Notify remediated",
            "Remediated",
        ),
    ],
    "rolled back": [
        *PROPOSED,
        *(
            "Notify operators",
            "Closed loop?",
            "REVIEWING",
            "Run critic agent",
            "Review outcome?",
            "Approved automatically",
        ),
        *("REMEDIATING", "Apply actions", "Applied?", "VERIFYING", "Settle", "Verify fix", "Fixed?", "ROLLING_BACK"),
        *("Undo actions", "Undone?", "ROLLED_BACK", "Notify rolled back", "Rolled back"),
    ],
    "error": [
        "RECEIVED",
        "Function budget",
        "Account budget",
        "INVESTIGATING",
        "Run investigator agent",
        "ERROR",
        "Incident error",
    ],
    "failed": [*START, "FAILED", "Incident failed"],
    "suppressed": ["RECEIVED", "Function budget", "SUPPRESSED", "Suppressed"],
    "awaiting approval": [
        *PROPOSED,
        *("Notify operators", "Closed loop?", "REVIEWING", "Run critic agent", "Review outcome?", "AWAITING_APPROVAL"),
        "Wait for approval",
    ],
}


def _boxes(root: ET.Element) -> dict[str, tuple[float, ...]]:
    return {
        g.get("data-state"): tuple(float(v) for v in g.get("data-box").split(","))
        for g in root.iter("{http://www.w3.org/2000/svg}g")
        if g.get("data-box")
    }


def _crossings(points: list[tuple[float, float]], boxes: dict[str, tuple[float, ...]], ends: set[str]) -> list[str]:
    """The boxes (other than the edge's own two) that a polyline's segments enter (touching an edge is not entering)."""
    hit = []
    for name, (x, y, w, h) in boxes.items():
        if name in ends:
            continue
        for (x1, y1), (x2, y2) in zip(points, points[1:], strict=False):
            lo_x, hi_x, lo_y, hi_y = min(x1, x2), max(x1, x2), min(y1, y2), max(y1, y2)
            if lo_x < x + w - 0.5 and hi_x > x + 0.5 and lo_y < y + h - 0.5 and hi_y > y + 0.5:
                hit.append(name)
                break
    return hit


def _edges(root: ET.Element) -> list[tuple[ET.Element, list[tuple[float, float]]]]:
    out = []
    for g in root.iter("{http://www.w3.org/2000/svg}g"):
        if "edge" in (g.get("class") or "").split():
            line = g.find("s:polyline", NS)
            points = [tuple(float(v) for v in p.split(",")) for p in line.get("points").split()]
            out.append((g, points))
    return out


def test_the_checker_sees_a_line_through_a_box():
    boxes = {"A": (0.0, 0.0, 10.0, 10.0), "B": (0.0, 20.0, 10.0, 10.0), "C": (0.0, 40.0, 10.0, 10.0)}
    assert _crossings([(5, 10), (5, 40)], boxes, {"A", "C"}) == ["B"]
    assert _crossings([(5, 10), (5, 15), (15, 15), (15, 40)], boxes, {"A", "C"}) == []


@pytest.mark.parametrize("name", sorted(PATHS))
def test_no_edge_passes_through_a_state_box(name):
    visited = PATHS[name]
    svg = render_svg(
        ASL, visited, failed=visited[-1] in ("Incident error", "Incident failed"), running=name == "awaiting approval"
    )
    root = ET.fromstring(svg)
    boxes = _boxes(root)
    assert set(boxes) == {*ASL["States"], "Start", "End"}
    edges = _edges(root)
    taken = [(g, p) for g, p in edges if "taken" in g.get("class").split()]
    # Every consecutive pair of the path is drawn as a taken edge, from Start to End (a running one has no End yet).
    expected = {("Start", visited[0]), *zip(visited, visited[1:], strict=False)}
    if name != "awaiting approval":
        expected.add((visited[-1], "End"))
    drawn = {
        (g.get("data-from").replace("(start)", "Start"), g.get("data-to").replace("(end)", "End")) for g, _ in taken
    }
    assert drawn == expected
    for g, points in edges:
        ends = {g.get("data-from"), g.get("data-to"), "Start" if g.get("data-from") == "(start)" else "", "End"}
        ends = {e for e in ends if e} - ({"End"} if g.get("data-to") != "(end)" else set())
        crossed = _crossings(points, boxes, ends)
        assert not crossed, f"edge {g.get('data-from')} -> {g.get('data-to')} passes through {crossed}"
        # Orthogonal: each segment is horizontal or vertical.
        assert all(a[0] == b[0] or a[1] == b[1] for a, b in zip(points, points[1:], strict=False))


def test_a_loop_is_drawn_back_up_without_crossing_a_box():
    loop = {
        "StartAt": "Poll",
        "States": {
            "Poll": {"Type": "Task", "Resource": "x", "Next": "Ready?"},
            "Ready?": {"Type": "Choice", "Choices": [{"Condition": "{% true %}", "Next": "Done"}], "Default": "Wait"},
            "Wait": {"Type": "Wait", "Seconds": 1, "Next": "Poll"},
            "Done": {"Type": "Succeed"},
        },
    }
    visited = ["Poll", "Ready?", "Wait", "Poll", "Ready?", "Done"]
    root = ET.fromstring(render_svg(loop, visited))
    boxes = _boxes(root)
    back = [p for g, p in _edges(root) if (g.get("data-from"), g.get("data-to")) == ("Wait", "Poll")]
    assert back and "taken" in next(g for g, _ in _edges(root) if g.get("data-from") == "Wait").get("class")
    assert back[0][-1][1] < back[0][0][1]  # it ends above where it starts
    assert not _crossings(back[0], boxes, {"Wait", "Poll"})


def test_markers_legend_colours_and_times():
    visited = PATHS["error"]
    base = datetime(2026, 1, 1, tzinfo=UTC)
    events, clock = [], base
    for state in visited:
        events.append({"timestamp": clock, "type": "TaskStateEntered", "stateEnteredEventDetails": {"name": state}})
        clock += timedelta(milliseconds=250 if state != "Run investigator agent" else 4200)
        if state != "Incident error":
            events.append({"timestamp": clock, "type": "TaskStateExited", "stateExitedEventDetails": {"name": state}})
    events.append({"timestamp": clock + timedelta(seconds=1), "type": "ExecutionFailed"})
    times = state_times(events)
    assert times["Run investigator agent"] == pytest.approx(4.2) and times["Incident error"] == pytest.approx(1.25)
    root = ET.fromstring(render_svg(ASL, visited, failed=True, times=times))
    states = {g.get("data-state"): g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("data-state")}
    assert "failed" in states["Incident error"].get("class") and "visited" in states["ERROR"].get("class")
    assert "not-visited" in states["REMEDIATED"].get("class")
    texts = lambda g: [t.text for t in g.iter("{http://www.w3.org/2000/svg}text")]  # noqa: E731
    assert texts(states["Run investigator agent"]) == ["Run investigator agent", "4.2 s"]
    assert texts(states["RECEIVED"]) == ["RECEIVED", "250 ms"]
    assert texts(states["DIAGNOSED"]) == ["DIAGNOSED"]  # not visited: no time
    legend = next(g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "legend")
    assert {"path taken", "failed here", "not visited", "on error (Catch)"} <= set(texts(legend))
    assert texts(states["Start"]) == ["Start"] and texts(states["End"]) == ["End"]
