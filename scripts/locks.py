"""The project's locks: what each install takes, how `make lock` / `make upgrade` renew them, and the check.

Every install takes exact versions with their hashes from a committed lock and never resolves:

    uv.lock                       the project's environment (.venv: `uv sync --frozen --extra dev`)
    requirements/uv.txt           uv itself, bootstrapped into .uv with `pip --require-hashes`
    requirements/tools.txt        the validation tools (.tools/venv: aws-sam-cli, cfn-lint)
    requirements/package-lock.json  the ASL validator (.tools/node_modules, `npm ci`)
    requirements/lambda.txt       the dependencies layer   } one resolution for the functions' runtime
    requirements/openai-layer.txt the OpenAI-compatible layer } (python3.12, manylinux_2_34 x86_64)

The two layers are resolved from pyproject.toml (the base dependencies; the ``openai`` extra) for the
runtime, with every version held to uv.lock's: the layers ship exactly the versions the test suite runs,
and the second layer, which holds only what the first lacks, cannot disagree with it (they are merged under
/opt/python). boto3 ships in the dependencies layer although the runtime has one: the runtime's lags PyPI
and langchain-aws requires a recent one. requirements/lambda-exclude.txt is applied at resolution
(``uv pip compile --excludes``): what it names is in neither lock, so no layer build installs it.

Each generated requirements file carries the digest of its inputs; the check (``python scripts/locks.py
check``, a test, and scripts/build_layers.py before it builds) says which lock is stale and to run `make lock`.

    python scripts/locks.py lock      re-lock after an input changed, keeping every other version
    python scripts/locks.py upgrade   re-resolve everything to the newest versions the inputs allow
    python scripts/locks.py check     offline: do the locks agree with their inputs and with each other?

Standard library only: scripts/build_layers.py runs it with whatever python runs `sam build`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REQUIREMENTS = REPO / "requirements"
PYPROJECT = REPO / "pyproject.toml"
UV_LOCK = REPO / "uv.lock"
UV = REPO / ".uv" / "bin" / "uv"

# The functions' runtime (template.yaml: python3.12 on x86_64, Amazon Linux 2023 with glibc 2.34).
LAYER_PYTHON = "3.12"
LAYER_GLIBC = (2, 34)
LAYER_PLATFORM = f"x86_64-manylinux_{LAYER_GLIBC[0]}_{LAYER_GLIBC[1]}"
# The oldest Python the project supports (pyproject.toml requires-python): the tools' lock holds for it and newer.
TOOLS_PYTHON = "3.11"

DEPENDENCIES_LAYER = REQUIREMENTS / "lambda.txt"
OPENAI_LAYER = REQUIREMENTS / "openai-layer.txt"
EXCLUDE = REQUIREMENTS / "lambda-exclude.txt"
TOOLS_IN, TOOLS_LOCK = REQUIREMENTS / "tools.in", REQUIREMENTS / "tools.txt"
UV_IN, UV_TXT = REQUIREMENTS / "uv.in", REQUIREMENTS / "uv.txt"
NPM_MANIFEST, NPM_LOCK = REQUIREMENTS / "package.json", REQUIREMENTS / "package-lock.json"

COMPILE_COMMAND = "make lock"
INPUTS_LINE = "# inputs sha256:"
STALE = "run `make lock` (scripts/locks.py) and commit the locks"


class LockError(Exception):
    """A lock that does not agree with its inputs, or a lock that cannot be made."""


def canonical(name: str) -> str:
    """PEP 503 normalised distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(path: Path) -> list[str]:
    """The names a requirements-style input lists (one a line, # comments, specifiers and extras ignored)."""
    names = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(canonical(re.split(r"[\s\[<>=!~;]", line, maxsplit=1)[0]))
    return names


def _stripped(path: Path) -> list[str]:
    return [line.split("#", 1)[0].strip() for line in path.read_text().splitlines() if line.split("#", 1)[0].strip()]


def inputs_of(lock: Path) -> dict:
    """What a generated requirements file was made from; its digest is written into the file."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    if lock in (DEPENDENCIES_LAYER, OPENAI_LAYER):
        return {
            "dependencies": sorted(project["dependencies"]),
            "openai": sorted(project["optional-dependencies"]["openai"]),
            "exclude": sorted(requirement_names(EXCLUDE)),
            "python": LAYER_PYTHON,
            "platform": LAYER_PLATFORM,
        }
    if lock == TOOLS_LOCK:
        return {"requirements": _stripped(TOOLS_IN), "python": TOOLS_PYTHON}
    if lock == UV_TXT:
        return {"requirements": _stripped(UV_IN)}
    raise ValueError(f"no inputs known for {lock}")


def digest(inputs: dict) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def shown(path: Path) -> str:
    """A path as a message names it: relative to the repository when it is inside."""
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def parse_requirements(path: Path) -> dict[str, dict]:
    """A generated lock: {canonical name: {"version", "hashes", "block"}} (block: its lines, annotations too)."""
    entries: dict[str, dict] = {}
    current = None
    for line in path.read_text().splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            match = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", line)
            if not match:
                raise LockError(f"{shown(path)}: not an exact pin: {line!r}")
            current = canonical(match[1])
            entries[current] = {"version": match[2], "hashes": [], "block": [line]}
        elif current is not None and line.startswith("    "):
            entries[current]["block"].append(line)
        else:
            current = None
            continue
        entries[current]["hashes"] += re.findall(r"--hash=(sha256:[0-9a-f]{64})", line)
    return entries


def recorded_digest(path: Path) -> str | None:
    for line in path.read_text().splitlines():
        if line.startswith(INPUTS_LINE):
            return line[len(INPUTS_LINE) :].split()[0]
    return None


def uv_lock_versions() -> dict[str, set[str]]:
    """{canonical name: versions} of every package uv.lock holds (a package may fork by Python or platform)."""
    versions: dict[str, set[str]] = {}
    for package in tomllib.loads(UV_LOCK.read_text()).get("package", []):
        if "version" in package:
            versions.setdefault(canonical(package["name"]), set()).add(package["version"])
    return versions


def check(uv: Path | None = None) -> list[str]:
    """Every way the locks disagree with their inputs or with each other, as messages that say what to run.

    Offline. ``uv``, when given, also checks uv.lock against pyproject.toml (``uv lock --check``).
    """
    problems = []
    generated = [DEPENDENCIES_LAYER, OPENAI_LAYER, TOOLS_LOCK, UV_TXT]
    parsed: dict[Path, dict[str, dict]] = {}
    for lock in generated:
        name = shown(lock)
        if not lock.exists():
            problems.append(f"{name} is missing: {STALE}")
            continue
        try:
            current = digest(inputs_of(lock))
        except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
            return [f"the locks' inputs cannot be read ({type(exc).__name__}: {exc}): fix them, then run `make lock`"]
        if recorded_digest(lock) != current:
            problems.append(f"{name} was not made from the current inputs ({_input_names(lock)}): {STALE}")
        try:
            parsed[lock] = parse_requirements(lock)
        except LockError as exc:
            problems.append(f"{exc}: {STALE}")
            continue
        unhashed = sorted(n for n, e in parsed[lock].items() if not e["hashes"])
        if unhashed:
            problems.append(f"{name}: no hashes for {', '.join(unhashed)}: {STALE}")
    if UV_LOCK.exists():
        in_uv_lock = uv_lock_versions()
        for lock in (DEPENDENCIES_LAYER, OPENAI_LAYER):
            for package, entry in parsed.get(lock, {}).items():
                if entry["version"] not in in_uv_lock.get(package, set()):
                    problems.append(
                        f"{shown(lock)} pins {package}=={entry['version']}, uv.lock "
                        f"{' or '.join(sorted(in_uv_lock.get(package, set()))) or 'nothing'}: the layers must ship "
                        f"what the tests run: {STALE}"
                    )
    else:
        problems.append(f"uv.lock is missing: {STALE}")
    layers = parsed.get(DEPENDENCIES_LAYER, {}), parsed.get(OPENAI_LAYER, {})
    both = sorted(set(layers[0]) & set(layers[1]))
    if both:
        problems.append(f"both layers hold {', '.join(both)} (they are merged at run time): {STALE}")
    shipped = sorted((set(layers[0]) | set(layers[1])) & set(requirement_names(EXCLUDE)))
    if shipped:
        problems.append(f"the layer locks hold {', '.join(shipped)}, which lambda-exclude.txt excludes: {STALE}")
    if NPM_MANIFEST.exists() and not NPM_LOCK.exists():
        problems.append(f"requirements/package-lock.json is missing: {STALE}")
    elif NPM_MANIFEST.exists():
        wanted = json.loads(NPM_MANIFEST.read_text()).get("dependencies", {})
        locked = json.loads(NPM_LOCK.read_text()).get("packages", {}).get("", {}).get("dependencies", {})
        if wanted != locked:
            problems.append(f"requirements/package-lock.json was not made from requirements/package.json: {STALE}")
    if uv is not None:
        out = _run([str(uv), "lock", "--check", "--offline", "--quiet"], check=False)
        if out.returncode != 0:
            problems.append(f"uv.lock does not match pyproject.toml: {STALE}")
    return problems


def _input_names(lock: Path) -> str:
    if lock in (DEPENDENCIES_LAYER, OPENAI_LAYER):
        return "pyproject.toml's dependencies and openai extra, requirements/lambda-exclude.txt"
    return str((TOOLS_IN if lock == TOOLS_LOCK else UV_IN).relative_to(REPO))


# ------------------------------------------------------------------------------------------------ locking


def _run(command: list[str], check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    out = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, **kwargs)
    if check and out.returncode != 0:
        raise LockError(f"{' '.join(command[:4])} ... failed:\n{out.stderr.strip() or out.stdout.strip()}")
    return out


def _stamp(path: Path, replace: dict[str, str] | None = None) -> None:
    """Write the inputs' digest under uv's header (and name temporary files after what they stand for)."""
    text = path.read_text()
    for old, new in (replace or {}).items():
        text = text.replace(old, new)
    lines = [line for line in text.splitlines() if not line.startswith(INPUTS_LINE)]
    at = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    lines.insert(at, f"{INPUTS_LINE}{digest(inputs_of(path))}  (scripts/locks.py check compares it)")
    path.write_text("\n".join(lines) + "\n")


def _compile(uv: Path, output: Path, *args: str, upgrade: bool) -> None:
    command = [str(uv), "pip", "compile", *args, "--generate-hashes", "--quiet"]
    command += ["--custom-compile-command", COMPILE_COMMAND, "--output-file", str(output)]
    _run(command + (["--upgrade"] if upgrade else []))


def _layer_args(constraints: Path, exclude: bool = True) -> list[str]:
    excludes = ["--excludes", str(EXCLUDE.relative_to(REPO))] if exclude else []
    return [
        *excludes,
        "--python-version",
        LAYER_PYTHON,
        "--python-platform",
        LAYER_PLATFORM,
        "--only-binary",
        ":all:",
        "--constraints",
        str(constraints),
    ]


def _refresh_build_constraint(uv: Path) -> None:
    """Pin pyproject.toml's build constraint to the newest setuptools its build-system allows, with hashes."""
    requires = tomllib.loads(PYPROJECT.read_text())["build-system"]["requires"]
    with tempfile.TemporaryDirectory() as work:
        wanted = Path(work, "build.in")
        wanted.write_text("\n".join(requires) + "\n")
        pinned = Path(work, "build.txt")
        _run([str(uv), "pip", "compile", str(wanted), "--generate-hashes", "--no-header", "-q", "-o", str(pinned)])
        pins = parse_requirements(pinned)
    entries = ", ".join(
        f'{{ requirement = "{name}=={e["version"]}", hashes = [{", ".join(json.dumps(h) for h in e["hashes"])}] }}'
        for name, e in sorted(pins.items())
    )
    text = PYPROJECT.read_text()
    new, count = re.subn(
        r"(?m)^build-constraint-dependencies = .*$", f"build-constraint-dependencies = [{entries}]", text
    )
    if count != 1:
        raise LockError("pyproject.toml: no build-constraint-dependencies line under [tool.uv] to renew")
    PYPROJECT.write_text(new)


def lock(uv: Path, upgrade: bool = False) -> None:
    """Renew every lock from its inputs: `make lock` (keep versions) or `make upgrade` (newest allowed)."""
    if upgrade:
        _refresh_build_constraint(uv)
    _run([str(uv), "lock", "--quiet"] + (["--upgrade"] if upgrade else []))
    # uv and the tools run on whatever Python the developer has (the project's floor and newer, any platform).
    for source, output in ((UV_IN, UV_TXT), (TOOLS_IN, TOOLS_LOCK)):
        _compile(uv, output, shown(source), "--universal", "--python-version", TOOLS_PYTHON, upgrade=upgrade)
        _stamp(output)
    with tempfile.TemporaryDirectory() as work:
        # The layers are held to uv.lock's versions: exported as constraints (markers evaluated for python3.12).
        pins = Path(work, "uv-lock-pins.txt")
        export = ["export", "--frozen", "--all-extras", "--no-hashes", "--no-emit-project", "--no-header"]
        _run([str(uv), *export, "--no-annotate", "--quiet", "--output-file", str(pins)])
        _compile(uv, DEPENDENCIES_LAYER, "pyproject.toml", *_layer_args(pins), upgrade=False)
        _stamp(DEPENDENCIES_LAYER, {str(pins): "uv.lock"})
        both = Path(work, "layers.txt")
        _compile(uv, both, "pyproject.toml", "--extra", "openai", *_layer_args(pins), upgrade=False)
        first = parse_requirements(DEPENDENCIES_LAYER)
        # A name nothing pulls in any more is harmless, but say so: the list should shrink.
        unexcluded = Path(work, "unexcluded.txt")
        _compile(
            uv, unexcluded, "pyproject.toml", "--extra", "openai", *_layer_args(pins, exclude=False), upgrade=False
        )
        idle = sorted(set(requirement_names(EXCLUDE)) - set(parse_requirements(unexcluded)))
        if idle:
            print(
                f"requirements/lambda-exclude.txt names {', '.join(idle)}, which nothing requires now", file=sys.stderr
            )
        header = [line for line in both.read_text().splitlines() if line.startswith("#")][:2]
        blocks = [e["block"] for name, e in parse_requirements(both).items() if name not in first]
        OPENAI_LAYER.write_text(
            "\n".join(
                header
                + [
                    "# The OpenAI-compatible layer: what the openai extra adds to requirements/lambda.txt (one resolution)."
                ]
                + [line for block in blocks for line in block]
            ).replace(str(pins), "uv.lock")
            + "\n"
        )
        _stamp(OPENAI_LAYER)
    npm = shutil.which("npm")
    if npm:
        if upgrade:
            NPM_LOCK.unlink(missing_ok=True)
        _run([npm, "install", "--package-lock-only", "--no-audit", "--no-fund", "--silent", "--prefix", "requirements"])
    else:
        print("npm not found: requirements/package-lock.json left as it is", file=sys.stderr)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("lock", "upgrade", "check"):
        print(__doc__, file=sys.stderr)
        return 2
    uv = UV if UV.exists() else (Path(shutil.which("uv")) if shutil.which("uv") else None)
    if argv[0] != "check":
        if uv is None:
            print("uv is not installed: run `make lock`, which bootstraps it into .uv", file=sys.stderr)
            return 1
        try:
            lock(uv, upgrade=argv[0] == "upgrade")
        except LockError as exc:
            print(f"locking failed: {exc}", file=sys.stderr)
            return 1
    problems = check(uv)
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print(
            "locks agree with their inputs: uv.lock, requirements/{uv,tools,lambda,openai-layer}.txt, package-lock.json"
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
