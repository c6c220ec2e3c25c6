"""A picture of the state machine with the path an execution took, like the console's execution view.

Pure SVG, no dependencies: states laid out in layers from StartAt, visited states and the transitions
taken drawn in green, the state an execution failed in drawn in red, the rest in grey.
"""

from __future__ import annotations

from html import escape
from typing import Any

BOX_W, BOX_H, GAP_X, GAP_Y, MARGIN = 190, 40, 30, 36, 20


def _targets(state: dict[str, Any]) -> list[str]:
    out = [state["Next"]] if "Next" in state else []
    out += [c["Next"] for c in state.get("Choices", []) if "Next" in c]
    if "Default" in state:
        out.append(state["Default"])
    out += [c["Next"] for c in state.get("Catch", [])]
    return list(dict.fromkeys(out))


def _layers(definition: dict[str, Any]) -> dict[str, int]:
    """Longest-path layering from StartAt: error states end up below the states that lead to them."""
    states = definition["States"]
    layer = {definition["StartAt"]: 0}
    for _ in range(len(states)):  # relax edges; a cycle simply stops growing after len(states) rounds
        changed = False
        for name in list(layer):
            for target in _targets(states[name]):
                if layer.get(target, -1) < layer[name] + 1 and layer[name] + 1 < len(states):
                    layer[target] = layer[name] + 1
                    changed = True
        if not changed:
            break
    for name in states:  # unreachable states still get drawn, at the bottom
        layer.setdefault(name, max(layer.values()) + 1)
    return layer


def render_svg(definition: dict[str, Any], visited: list[str], failed: bool = False) -> str:
    layer = _layers(definition)
    rows: dict[int, list[str]] = {}
    for name in definition["States"]:
        rows.setdefault(layer[name], []).append(name)
    width = max(len(r) for r in rows.values()) * (BOX_W + GAP_X) + 2 * MARGIN
    height = (max(rows) + 1) * (BOX_H + GAP_Y) + 2 * MARGIN
    pos = {}
    for row, names in rows.items():
        offset = (width - len(names) * (BOX_W + GAP_X) + GAP_X) / 2
        for i, name in enumerate(names):
            pos[name] = (offset + i * (BOX_W + GAP_X), MARGIN + row * (BOX_H + GAP_Y))
    taken = set(zip(visited, visited[1:], strict=False))
    last = visited[-1] if visited else None
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" font-family="sans-serif" font-size="13">',
        '<defs><marker id="a" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#888"/></marker>'
        '<marker id="g" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#2e7d32"/></marker></defs>',
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="white"/>',
    ]
    for name, state in definition["States"].items():
        x1, y1 = pos[name]
        for target in _targets(state):
            x2, y2 = pos[target]
            on_path = (name, target) in taken
            colour, marker, w = ("#2e7d32", "g", 2.5) if on_path else ("#bbb", "a", 1)
            parts.append(
                f'<line x1="{x1 + BOX_W / 2:.0f}" y1="{y1 + BOX_H:.0f}" x2="{x2 + BOX_W / 2:.0f}" y2="{y2:.0f}" '
                f'stroke="{colour}" stroke-width="{w}" marker-end="url(#{marker})"/>'
            )
    for name, state in definition["States"].items():
        x, y = pos[name]
        if name == last and (failed or state["Type"] == "Fail"):
            fill, stroke = "#ffebee", "#c62828"
        elif name in visited:
            fill, stroke = "#e8f5e9", "#2e7d32"
        else:
            fill, stroke = "#f5f5f5", "#9e9e9e"
        rx = 20 if state["Type"] in ("Succeed", "Fail") else 4
        parts.append(
            f'<rect x="{x:.0f}" y="{y:.0f}" width="{BOX_W}" height="{BOX_H}" rx="{rx}" fill="{fill}" stroke="{stroke}" stroke-width="1.5"/>'
        )
        parts.append(
            f'<text x="{x + BOX_W / 2:.0f}" y="{y + BOX_H / 2 + 5:.0f}" text-anchor="middle">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)
