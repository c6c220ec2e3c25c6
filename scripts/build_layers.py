"""Build the Lambda layers from their locks: the dependencies layer, and the OpenAI-compatible layer.

Run by ``sam build`` (Makefile targets ``build-DependenciesLayer`` and ``build-OpenAiCompatibleLayer``):

    python scripts/build_layers.py dependencies TARGET_DIR    requirements/lambda.txt
    python scripts/build_layers.py openai TARGET_DIR          requirements/openai-layer.txt

Both locks come from one resolution for the functions' runtime (python3.12 on Amazon Linux 2023), held to
uv.lock's versions and without what requirements/lambda-exclude.txt names (scripts/locks.py). The build
installs exactly those pins: manylinux wheels for the runtime whatever Python runs the build, each checked
against its hash, no dependency resolved (``--no-deps``: the lock is the whole set). A stale lock stops the
build before anything is downloaded, with the command that renews it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import distributions
from pathlib import Path

import locks  # scripts/locks.py, beside this file

# Every glibc the runtime's (2.34) satisfies, newest first: pip matches wheel tags exactly and expands only
# the legacy manylinux2014/2010 aliases itself.
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(locks.LAYER_GLIBC[1], 4, -1)]
PLATFORMS += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
LAYERS = {"dependencies": locks.DEPENDENCIES_LAYER, "openai": locks.OPENAI_LAYER}


def install(lock: Path, target: Path) -> list[str]:
    """pip-install every pin of ``lock`` into ``target`` for the runtime, hash-checked, resolving nothing."""
    platform = [arg for tag in PLATFORMS for arg in ("--platform", tag)]
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--upgrade", "--target", str(target)]
    command += [*platform, "--implementation", "cp", "--python-version", locks.LAYER_PYTHON, "--only-binary=:all:"]
    # Requires-Python was settled for the runtime when the lock was made. Older pips (23.2 seen) hold an index's
    # published metadata against the Python running the build: a 3.11 refused a wheel requiring >=3.12.
    command += ["--require-hashes", "--no-deps", "--ignore-requires-python", "-r", str(lock)]
    # As root (a container, CI), pip warns about the system's packages: --target touches none of them.
    subprocess.run(command, check=True, env={**os.environ, "PIP_ROOT_USER_ACTION": "ignore"})
    return sorted(d.metadata["Name"] for d in distributions(path=[str(target)]))


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in LAYERS:
        print(__doc__, file=sys.stderr)
        return 2
    problems = locks.check()
    if problems:
        print("The layers' locks are stale; nothing was built:", *problems, sep="\n  ", file=sys.stderr)
        return 1
    try:
        import pip  # noqa: F401
    except ImportError:
        print(f"{sys.executable} has no pip, which builds the layers: use a Python with pip", file=sys.stderr)
        return 1
    installed = install(LAYERS[argv[0]], Path(argv[1]))
    print(f"{argv[0]} layer from {locks.shown(LAYERS[argv[0]])}: {len(installed)} distributions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
