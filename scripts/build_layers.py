"""Build the Lambda layers: the dependencies layer, and the OpenAI-compatible layer that completes it.

Run by ``sam build`` (Makefile targets ``build-DependenciesLayer`` and ``build-OpenAiCompatibleLayer``):

    python scripts/build_layers.py dependencies TARGET_DIR
    python scripts/build_layers.py openai TARGET_DIR

Both install manylinux wheels for the functions' runtime (python3.12), whatever Python runs the build.

dependencies: requirements/lambda.txt, then every distribution requirements/lambda-exclude.txt names is
removed again (each line there says why no deployed code needs it; pip cannot skip one dependency).

openai: the two layers are merged under /opt/python at run time, so this one must not carry its own copy
of anything the dependencies layer has, and what it adds must work with the versions there: resolve the
dependencies layer's requirements, install requirements/openai-layer.txt constrained to those exact
versions, then remove every distribution of that resolution (shipped there, or excluded from both).
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
REQUIREMENTS = REPO / "requirements"
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


def excluded() -> set[str]:
    """The distribution names requirements/lambda-exclude.txt lists (one a line, # comments)."""
    lines = (REQUIREMENTS / "lambda-exclude.txt").read_text().splitlines()
    return {canonical(line.split("#", 1)[0].strip()) for line in lines if line.split("#", 1)[0].strip()}


def remove_distributions(target: Path, names: set[str]) -> list[str]:
    """Delete every file the named distributions installed under ``target`` (by their RECORD)."""
    removed = []
    for dist in list(distributions(path=[str(target)])):
        name = dist.metadata["Name"]
        if canonical(name) not in names:
            continue
        for file in dist.files or []:
            path = Path(target, file)
            if path.is_file() or path.is_symlink():
                path.unlink()
        shutil.rmtree(Path(str(dist._path)), ignore_errors=True)  # the .dist-info folder itself
        removed.append(name)
    for folder in sorted((p for p in target.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    return sorted(removed)


def build_dependencies(target: Path) -> None:
    pip("--upgrade", "--no-compile", "--target", str(target), "-r", str(REQUIREMENTS / "lambda.txt"))
    names = excluded()
    removed = remove_distributions(target, names)
    # A name no longer pulled in (a dependency dropped it) is harmless, but say so: the list should shrink.
    missing = sorted(names - {canonical(name) for name in removed})
    print(
        f"Dependencies layer: removed {', '.join(removed) or 'nothing'}"
        + (f" (not installed: {missing})" if missing else "")
    )


def build_openai(target: Path) -> None:
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
            str(REQUIREMENTS / "lambda.txt"),
        )
        resolved = {
            canonical(item["metadata"]["name"]): item["metadata"]["version"]
            for item in json.loads(report.read_text())["install"]
        }
        constraints = Path(work) / "constraints.txt"
        constraints.write_text("".join(f"{name}=={version}\n" for name, version in sorted(resolved.items())))
        pip(
            "--upgrade",
            "--no-compile",
            "--target",
            str(target),
            "-c",
            str(constraints),
            "-r",
            str(REQUIREMENTS / "openai-layer.txt"),
        )
    # What the dependencies layer ships is found there; what it excludes is excluded here too.
    remove_distributions(target, set(resolved) | excluded())
    kept = sorted(d.metadata["Name"] for d in distributions(path=[str(target)]))
    print(f"OpenAI-compatible layer: {', '.join(kept)}")


def main(argv: list[str]) -> int:
    builders = {"dependencies": build_dependencies, "openai": build_openai}
    if len(argv) != 2 or argv[0] not in builders:
        print(__doc__, file=sys.stderr)
        return 2
    builders[argv[0]](Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
