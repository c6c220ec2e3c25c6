"""Draw the whole lifecycle state machine (statemachine/incident_lifecycle.asl.json) into docs/images/lifecycle.svg.

The picture is the one the incident report draws for an execution (incident_responder/reporting/picture.py),
with no path taken: every state, every transition, Catch transitions dashed.

.venv/bin/python scripts/lifecycle_picture.py           # writes the picture
.venv/bin/python scripts/lifecycle_picture.py --check   # exits 1 when the committed picture is not what it would draw
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from incident_responder.reporting.picture import render_svg

REPO = Path(__file__).resolve().parents[1]
ASL = REPO / "statemachine" / "incident_lifecycle.asl.json"
PICTURE = REPO / "docs" / "images" / "lifecycle.svg"
COMMAND = "python scripts/lifecycle_picture.py"


def render() -> str:
    """The SVG of the whole state machine, nothing visited."""
    definition = json.loads(ASL.read_text(encoding="utf-8"))
    return render_svg(definition, []) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed picture is out of date")
    args = parser.parse_args(argv)
    picture = render()
    relative = PICTURE.relative_to(REPO)
    if args.check:
        if not PICTURE.exists() or PICTURE.read_text(encoding="utf-8") != picture:
            print(f"{relative} is out of date with statemachine/{ASL.name}: run `{COMMAND}`", file=sys.stderr)
            return 1
        print(f"{relative} is up to date")
        return 0
    PICTURE.parent.mkdir(parents=True, exist_ok=True)
    PICTURE.write_text(picture, encoding="utf-8")
    print(f"wrote {relative}: {len(json.loads(ASL.read_text(encoding='utf-8'))['States'])} states")
    return 0


if __name__ == "__main__":
    sys.exit(main())
