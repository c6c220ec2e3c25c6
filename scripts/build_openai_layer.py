"""Build the OpenAI-compatible client layer so that it fits the dependencies layer exactly.

Run by ``sam build`` (Makefile target ``build-OpenAiCompatibleLayer``). The two layers are merged under
/opt/python at run time, so this one must not carry its own copy of anything the dependencies layer
has, and what it adds must work with the versions there: resolve the dependencies layer's
requirements, install requirements/openai-layer.txt constrained to those exact versions, then remove
every distribution the dependencies layer already ships.

    python scripts/build_openai_layer.py TARGET_DIR
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import distributions
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLATFORM = [
    "--platform",
    "manylinux2014_x86_64",
    "--implementation",
    "cp",
    "--python-version",
    "3.12",
    "--only-binary=:all:",
]


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *PLATFORM, *args], check=True)


def canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def main(target: Path) -> int:
    with tempfile.TemporaryDirectory() as work:
        report = Path(work) / "report.json"
        pip(
            "--dry-run",
            "--ignore-installed",
            "--target",
            f"{work}/none",
            "--report",
            str(report),
            "-r",
            str(REPO / "requirements" / "lambda.txt"),
        )
        shipped = {
            canonical(item["metadata"]["name"]): item["metadata"]["version"]
            for item in json.loads(report.read_text())["install"]
        }
        constraints = Path(work) / "constraints.txt"
        constraints.write_text("".join(f"{name}=={version}\n" for name, version in sorted(shipped.items())))
        pip(
            "--upgrade",
            "--no-compile",
            "--target",
            str(target),
            "-c",
            str(constraints),
            "-r",
            str(REPO / "requirements" / "openai-layer.txt"),
        )
    for dist in list(distributions(path=[str(target)])):
        if canonical(dist.metadata["Name"]) not in shipped:
            continue
        for file in dist.files or []:
            path = Path(target, file)
            if path.is_file():
                path.unlink()
        shutil.rmtree(Path(str(dist._path)), ignore_errors=True)  # the .dist-info folder itself
    for folder in sorted((p for p in target.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    kept = sorted(d.metadata["Name"] for d in distributions(path=[str(target)]))
    print(f"OpenAI-compatible layer: {', '.join(kept)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
