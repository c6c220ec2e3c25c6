"""The state machine with the path an execution took, drawn like the Step Functions console's graph view.

Pure SVG, no dependencies. States are laid out in layers from a Start marker down to an End marker
(longest path, loops drawn back up), each layer ordered to keep edges short. Every edge is routed
orthogonally through the empty lanes between rows and columns, never across a state's box, so the path
taken (green, with each visited state's time in it) never appears to pass through a state it did not
visit. The state an execution failed in is red; a running execution's current state is blue. Catch
edges are dashed. ``<g class="edge taken">`` / ``data-from`` / ``data-to`` and each box's ``data-state``
let a test check the geometry.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from html import escape
from typing import Any

START, END = "(start)", "(end)"
BOX_W, BOX_H, PITCH_X, PITCH_Y, MARGIN, LEGEND_H = 200, 44, 250, 84, 24, 56
MARKER_R = 14
GREEN, RED, BLUE, GREY = "#2e7d32", "#c62828", "#1565c0", "#9e9e9e"


def _targets(state: dict[str, Any]) -> list[tuple[str, bool]]:
    """(target, is a Catch edge), each target once; a Catch to a state also reached normally counts as normal."""
    out: dict[str, bool] = {}
    normal = [state.get("Next"), state.get("Default"), *(c.get("Next") for c in state.get("Choices", []))]
    for target in normal:
        if target:
            out[target] = False
    for catch in state.get("Catch", []):
        out.setdefault(catch["Next"], True)
    return list(out.items())


def _edges(definition: dict[str, Any]) -> list[tuple[str, str, bool]]:
    states = definition["States"]
    edges = [(START, definition["StartAt"], False)]
    for name, state in states.items():
        edges += [(name, target, catch) for target, catch in _targets(state) if target in states]
        if state["Type"] in ("Succeed", "Fail") or state.get("End"):
            edges.append((name, END, False))
    return edges


def _layers(nodes: list[str], edges: list[tuple[str, str, bool]]) -> dict[str, int]:
    """Longest-path layers over the graph without its back edges (found by a depth-first walk from Start)."""
    following: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b, _ in edges:
        following[a].append(b)
    back: set[tuple[str, str]] = set()
    order: list[str] = []  # reverse post-order: a topological order of the forward edges
    colour: dict[str, int] = {}
    for root in [START, *nodes]:
        if root in colour:
            continue
        stack = [(root, iter(following[root]))]
        colour[root] = 1
        while stack:
            node, rest = stack[-1]
            child = next(rest, None)
            if child is None:
                colour[node] = 2
                order.append(node)
                stack.pop()
            elif colour.get(child) == 1:
                back.add((node, child))
            elif child not in colour:
                colour[child] = 1
                stack.append((child, iter(following[child])))
    layer = dict.fromkeys(nodes, 0)
    for node in reversed(order):
        for child in following[node]:
            if (node, child) not in back and child != END:
                layer[child] = max(layer[child], layer[node] + 1)
    layer[END] = max(v for k, v in layer.items() if k != END) + 1
    return layer


def _columns(nodes: list[str], edges: list[tuple[str, str, bool]], layer: dict[str, int]) -> dict[str, int]:
    """A column per node: each layer ordered by its neighbours' mean column (a few sweeps down and up),
    then placed as near that mean as the nodes before it in the layer allow."""
    rows: dict[int, list[str]] = {}
    for node in nodes:
        rows.setdefault(layer[node], []).append(node)
    above = {n: [a for a, b, _ in edges if b == n and layer[a] < layer[n]] for n in nodes}
    below = {n: [b for a, b, _ in edges if a == n and layer[b] > layer[n]] for n in nodes}
    col = {n: i for names in rows.values() for i, n in enumerate(names)}

    def place(names: list[str], neighbours: dict[str, list[str]]) -> None:
        wanted = {
            n: sum(col[m] for m in neighbours[n]) / len(neighbours[n]) if neighbours[n] else col[n] for n in names
        }
        names.sort(key=lambda n: wanted[n])
        last = -1
        for n in names:
            col[n] = last = max(round(wanted[n]), last + 1)

    for _ in range(4):
        for row in sorted(rows):
            place(rows[row], above)
        for row in sorted(rows, reverse=True):
            place(rows[row], below)
    for row in sorted(rows):
        place(rows[row], above)
    shift = min(col.values())
    return {n: c - shift for n, c in col.items()}


def state_times(events: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Seconds spent in each state over an execution's history (summed when a state ran more than once;
    a state still running, or failed in, counts until the history's last event)."""
    spent: dict[str, float] = {}
    entered: dict[str, datetime] = {}
    last: datetime | None = None
    for event in events:
        stamp = event.get("timestamp")
        if isinstance(stamp, str):
            stamp = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        if not isinstance(stamp, datetime):
            continue
        last = stamp
        if "stateEnteredEventDetails" in event:
            entered[event["stateEnteredEventDetails"]["name"]] = stamp
        elif "stateExitedEventDetails" in event:
            name = event["stateExitedEventDetails"]["name"]
            if name in entered:
                spent[name] = spent.get(name, 0.0) + (stamp - entered.pop(name)).total_seconds()
    for name, stamp in entered.items():
        if last is not None:
            spent[name] = spent.get(name, 0.0) + (last - stamp).total_seconds()
    return spent


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"


class _Layout:
    def __init__(self, definition: dict[str, Any]):
        self.states = definition["States"]
        self.nodes = [START, *self.states, END]
        self.edges = _edges(definition)
        self.layer = _layers(self.nodes, self.edges)
        self.col = _columns(self.nodes, self.edges, self.layer)
        self.width = (max(self.col.values()) + 1) * PITCH_X + 2 * MARGIN + 40  # room for the right-hand channel
        self.height = (max(self.layer.values()) + 1) * PITCH_Y + 2 * MARGIN + LEGEND_H

    def box(self, node: str) -> tuple[float, float, float, float]:
        """x, y, width, height of a node's drawn shape (markers are circles inside their cell)."""
        x = MARGIN + self.col[node] * PITCH_X + (PITCH_X - BOX_W) / 2
        y = MARGIN + LEGEND_H + self.layer[node] * PITCH_Y
        if node in (START, END):
            return x + BOX_W / 2 - MARKER_R, y + BOX_H / 2 - MARKER_R, 2 * MARKER_R, 2 * MARKER_R
        return x, y, BOX_W, BOX_H

    def centre_x(self, node: str) -> float:
        return MARGIN + self.col[node] * PITCH_X + PITCH_X / 2

    def gap_below(self, row: int) -> tuple[float, float]:
        """The empty band between ``row``'s boxes and the next row's."""
        top = MARGIN + LEGEND_H + row * PITCH_Y + BOX_H
        return top, top + PITCH_Y - BOX_H

    def channel(self, index: int) -> tuple[float, float]:
        """The empty band left of column ``index`` (between its boxes and the previous column's)."""
        right = MARGIN + index * PITCH_X + (PITCH_X - BOX_W) / 2
        return right - (PITCH_X - BOX_W), right

    def route(self, a: str, b: str, lane: dict[tuple[str, int], list[tuple[str, str]]]) -> list[tuple[float, float]]:
        """The polyline from ``a``'s bottom to ``b``'s top, through empty bands only."""
        ax, ay, _, ah = self.box(a)
        bx, by, _, _ = self.box(b)
        x1, x2 = self.centre_x(a), self.centre_x(b)
        ra, rb, ca, cb = self.layer[a], self.layer[b], self.col[a], self.col[b]
        start, end = (x1, ay + ah), (x2, by)
        if rb == ra + 1 and ca == cb:
            return [start, end]
        y_out = _lane_position(self.gap_below(ra), lane, ("row", ra), (a, b))
        if rb == ra + 1:
            return [start, (x1, y_out), (x2, y_out), end]
        # Down into the band under a's row, along it to a column channel, up or down that channel to the band
        # over b's row, along it, and down into b: a channel lies between b's column and its neighbour.
        index = cb if ca < cb else cb + 1
        x_mid = _lane_position(self.channel(index), lane, ("col", index), (a, b))
        y_in = _lane_position(self.gap_below(rb - 1), lane, ("row", rb - 1), (a, b))
        return [start, (x1, y_out), (x_mid, y_out), (x_mid, y_in), (x2, y_in), end]


def _lane_position(
    band: tuple[float, float], lanes: dict[tuple[str, int], list[tuple[str, str]]], key: tuple[str, int], edge: Any
) -> float:
    """Edges sharing a band are spread across it, each on its own line, in the order they asked for one."""
    users = lanes.setdefault(key, [])
    if edge not in users:
        users.append(edge)
    return band[0] + (band[1] - band[0]) * (users.index(edge) + 1) / (len(users) + 1)


def render_svg(
    definition: dict[str, Any],
    visited: list[str],
    *,
    failed: bool = False,
    running: bool = False,
    times: dict[str, float] | None = None,
) -> str:
    """The picture: ``visited`` is the states entered in order; ``failed`` marks the last one as where the
    execution failed; ``running`` marks it as the current state (no End reached yet); ``times`` puts each
    visited state's seconds in its box (:func:`state_times`)."""
    layout = _Layout(definition)
    times = times or {}
    path = [START, *visited] + ([] if running or not visited else [END])
    taken = set(zip(path, path[1:], strict=False))
    last = visited[-1] if visited else None
    # Two passes: the first counts each band's users so that lanes are spread evenly in the second.
    lanes: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for a, b, _ in layout.edges:
        layout.route(a, b, lanes)
    routes = {(a, b): layout.route(a, b, lanes) for a, b, _ in layout.edges}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{layout.width:.0f}" height="{layout.height:.0f}" '
        f'viewBox="0 0 {layout.width:.0f} {layout.height:.0f}" font-family="Helvetica, Arial, sans-serif" font-size="13">',
        "<defs>"
        + "".join(
            f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
            f'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
            for name, colour in (("grey", "#b0b0b0"), ("green", GREEN))
        )
        + "</defs>",
        f'<rect width="{layout.width:.0f}" height="{layout.height:.0f}" fill="white"/>',
        _legend(),
    ]
    ordered = sorted(layout.edges, key=lambda e: (e[0], e[1]) in taken)  # the path is drawn last, on top
    for a, b, catch in ordered:
        on_path = (a, b) in taken
        points = " ".join(f"{x:.1f},{y:.1f}" for x, y in routes[(a, b)])
        style = (
            f'stroke="{GREEN}" stroke-width="3" marker-end="url(#arrow-green)"'
            if on_path
            else 'stroke="#b0b0b0" stroke-width="1.2" marker-end="url(#arrow-grey)"'
        )
        dash = ' stroke-dasharray="5,4"' if catch else ""
        parts.append(
            f'<g class="edge{" taken" if on_path else ""}" data-from="{escape(a)}" data-to="{escape(b)}">'
            f'<polyline points="{points}" fill="none" {style}{dash}/></g>'
        )
    for node in layout.nodes:
        parts.append(_node(layout, node, visited, last, failed=failed, running=running, times=times, path=path))
    parts.append("</svg>")
    return "\n".join(parts)


def _node(
    layout: _Layout,
    node: str,
    visited: list[str],
    last: str | None,
    *,
    failed: bool,
    running: bool,
    times: dict[str, float],
    path: list[str],
) -> str:
    x, y, w, h = layout.box(node)
    if node in (START, END):
        reached = node in path
        fill = "#424242" if reached else "#e0e0e0"
        label = "Start" if node == START else "End"
        ring = (
            f'<circle cx="{x + w / 2:.1f}" cy="{y + h / 2:.1f}" r="{MARKER_R + 4}" fill="none" stroke="{fill}" stroke-width="2"/>'
            if node == END
            else ""
        )
        return (
            f'<g class="marker" data-state="{label}" data-box="{x:.1f},{y:.1f},{w:.1f},{h:.1f}">{ring}'
            f'<circle cx="{x + w / 2:.1f}" cy="{y + h / 2:.1f}" r="{MARKER_R}" fill="{fill}"/>'
            f'<text x="{x + w + 10:.1f}" y="{y + h / 2 + 4:.1f}" fill="#424242">{label}</text></g>'
        )
    state = layout.states[node]
    if node == last and running:
        fill, stroke, kind = "#e3f2fd", BLUE, "current"
    elif node == last and (failed or state["Type"] == "Fail"):
        fill, stroke, kind = "#ffebee", RED, "failed"
    elif node in visited:
        fill, stroke, kind = "#e8f5e9", GREEN, "visited"
    else:
        fill, stroke, kind = "#f5f5f5", GREY, "not-visited"
    rx = 20 if state["Type"] in ("Succeed", "Fail") else 6
    label = node if len(node) <= 26 else node[:25] + "…"
    text_y = y + h / 2 + (0 if node in times else 5)
    spent = (
        f'<text x="{x + w / 2:.1f}" y="{y + h / 2 + 15:.1f}" text-anchor="middle" font-size="11" fill="#555">'
        f"{_duration(times[node])}</text>"
        if node in times
        else ""
    )
    return (
        f'<g class="state {kind}" data-state="{escape(node)}" data-box="{x:.1f},{y:.1f},{w:.1f},{h:.1f}">'
        f"<title>{escape(node)} ({state['Type']})</title>"
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{w}" height="{h}" rx="{rx}" fill="{fill}" stroke="{stroke}" '
        f'stroke-width="{2 if kind != "not-visited" else 1.2}"/>'
        f'<text x="{x + w / 2:.1f}" y="{text_y:.1f}" text-anchor="middle" fill="#212121">{escape(label)}</text>{spent}</g>'
    )


def _legend() -> str:
    items = [
        ("#e8f5e9", GREEN, "visited (time spent)"),
        ("#ffebee", RED, "failed here"),
        ("#e3f2fd", BLUE, "running now"),
        ("#f5f5f5", GREY, "not visited"),
    ]
    parts = ['<g class="legend">']
    x = MARGIN
    for fill, stroke, text in items:
        parts.append(
            f'<rect x="{x}" y="{MARGIN}" width="18" height="14" rx="3" fill="{fill}" stroke="{stroke}" stroke-width="1.5"/>'
            f'<text x="{x + 24}" y="{MARGIN + 12}">{text}</text>'
        )
        x += 34 + 7 * len(text)
    for colour, width, dash, text in (
        (GREEN, 3, "", "path taken"),
        ("#b0b0b0", 1.2, "", "transition"),
        ("#b0b0b0", 1.2, "5,4", "on error (Catch)"),
    ):
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(
            f'<line x1="{x}" y1="{MARGIN + 7}" x2="{x + 26}" y2="{MARGIN + 7}" stroke="{colour}" stroke-width="{width}"{dashes}/>'
            f'<text x="{x + 32}" y="{MARGIN + 12}">{text}</text>'
        )
        x += 42 + 7 * len(text)
    parts.append("</g>")
    return "".join(parts)
