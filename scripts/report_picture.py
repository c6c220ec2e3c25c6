"""Take the README's picture of the incident report (docs/images/report.png) in headless Chromium.

.venv/bin/python scripts/report_picture.py                 # the newest out/*/report.html (run `make demo` first)
.venv/bin/python scripts/report_picture.py out/ID/report.html
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PICTURE = REPO / "docs" / "images" / "report.png"
NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Headless, and nothing reaching out: without the background-networking flags Chromium keeps trying hosts a
# closed network refuses. --no-sandbox: Chromium refuses its sandbox as root (CI containers).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def newest_report() -> Path | None:
    reports = sorted((REPO / "out").glob("*/report.html"), key=lambda path: path.stat().st_mtime)
    return reports[-1] if reports else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", nargs="?", type=Path, help="a report.html (default: the newest under out/)")
    parser.add_argument("--size", default="1280,1600", help="the window, WIDTH,HEIGHT (default: 1280,1600)")
    args = parser.parse_args(argv)
    report = args.report or newest_report()
    if report is None or not report.is_file():
        print("no report to draw: run `make demo` first, or name a report.html", file=sys.stderr)
        return 2
    binary = next((path for name in NAMES if (path := shutil.which(name))), None)
    if binary is None:
        print(f"no headless browser on PATH ({', '.join(NAMES)}): apt-get install chromium", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as profile:
        command = [
            binary,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={args.size}",
            f"--screenshot={PICTURE}",
            report.resolve().as_uri(),
        ]
        run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if run.returncode != 0 or not PICTURE.exists():
        print(f"chromium failed ({run.returncode}): {run.stderr.strip()[-400:]}", file=sys.stderr)
        return 1
    print(f"{PICTURE.relative_to(REPO)} <- {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
