"""The locks (scripts/locks.py): committed ones agree with their inputs, and each way one goes stale is caught
with a message that says to run `make lock`, by the check and by the layer build before it downloads anything."""

from __future__ import annotations

import base64
import hashlib
import html
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
UV = REPO / ".uv" / "bin" / "uv"
COPIED = ["pyproject.toml", "uv.lock", "requirements", "scripts/locks.py", "scripts/build_layers.py"]


def load_locks(root: Path):
    """scripts/locks.py as found under ``root`` (it locates every lock from its own path)."""
    spec = importlib.util.spec_from_file_location(f"locks_{abs(hash(root))}", root / "scripts" / "locks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def copy(tmp_path):
    """A copy of the locks and their inputs, to make stale."""
    for name in COPIED:
        source, target = REPO / name, tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy)(source, target)
    return tmp_path


def test_the_committed_locks_agree_with_their_inputs():
    locks = load_locks(REPO)
    assert locks.check(UV if UV.exists() else None) == []


def test_the_layers_are_one_set_held_to_the_tested_versions():
    locks = load_locks(REPO)
    first = locks.parse_requirements(locks.DEPENDENCIES_LAYER)
    second = locks.parse_requirements(locks.OPENAI_LAYER)
    assert "langchain-aws" in first and "boto3" in first and "langchain-openai" in second
    assert not set(first) & set(second)  # merged under /opt/python: one copy of each
    assert not (set(first) | set(second)) & set(locks.requirement_names(locks.EXCLUDE))
    tested = locks.uv_lock_versions()
    assert all(pin["version"] in tested[name] for name, pin in {**first, **second}.items())
    # Every pin has the hashes pip checks; nothing is left for the build to choose.
    assert all(pin["hashes"] for pin in {**first, **second}.values())


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def test_a_dependency_added_to_pyproject_and_not_locked_is_named(copy):
    _edit(copy / "pyproject.toml", '    "pyyaml>=6",\n', '    "pyyaml>=6",\n    "rich>=13",\n')
    problems = load_locks(copy).check(UV if UV.exists() else None)
    assert any(p.startswith("requirements/lambda.txt was not made from the current inputs") for p in problems)
    assert any(p.startswith("requirements/openai-layer.txt was not made") for p in problems)
    if UV.exists():
        assert (
            "uv.lock does not match pyproject.toml: run `make lock` (scripts/locks.py) and commit the locks" in problems
        )
    assert all("run `make lock`" in p for p in problems)


def test_a_tool_added_and_not_locked_is_named(copy):
    _edit(copy / "requirements" / "tools.in", "aws-sam-cli\n", "aws-sam-cli\nyamllint\n")
    assert load_locks(copy).check() == [
        "requirements/tools.txt was not made from the current inputs (requirements/tools.in): "
        "run `make lock` (scripts/locks.py) and commit the locks"
    ]


def test_a_layer_pin_that_is_not_the_tested_version_is_named(copy):
    lock = copy / "requirements" / "lambda.txt"
    version = re.search(r"^pydantic==(\S+) ", lock.read_text(), re.M)[1]
    _edit(lock, f"pydantic=={version} ", "pydantic==2.0.0 ")
    problems = load_locks(copy).check()
    assert len(problems) == 1 and problems[0].startswith(
        f"requirements/lambda.txt pins pydantic==2.0.0, uv.lock {version}"
    )


def test_an_excluded_distribution_in_a_layer_lock_is_named(copy):
    _edit(
        copy / "requirements" / "openai-layer.txt",
        "\njiter==",
        "\nnumpy==1.0 \\\n    --hash=sha256:" + "0" * 64 + "\njiter==",
    )
    problems = load_locks(copy).check()
    assert any("hold numpy, which lambda-exclude.txt excludes" in p for p in problems)


def test_an_unhashed_pin_is_named(copy):
    lock = copy / "requirements" / "uv.txt"
    lock.write_text(re.sub(r" \\\n(    --hash=\S+( \\)?\n)+", "\n", lock.read_text()))
    assert load_locks(copy).check() == [
        "requirements/uv.txt: no hashes for uv: run `make lock` (scripts/locks.py) and commit the locks"
    ]


def test_the_npm_lock_must_follow_its_manifest(copy):
    _edit(copy / "requirements" / "package.json", '"asl-validator": "^4.0.0"', '"asl-validator": "^5.0.0"')
    assert load_locks(copy).check() == [
        "requirements/package-lock.json was not made from requirements/package.json: "
        "run `make lock` (scripts/locks.py) and commit the locks"
    ]


def test_the_layer_build_stops_on_a_stale_lock_before_downloading(copy):
    """What `sam build` runs: a clear message and a failure, and nothing installed."""
    _edit(copy / "requirements" / "lambda-exclude.txt", "\nnumpy\n", "\nnumpy\norjson\n")
    target = copy / "build" / "python"
    out = subprocess.run(
        [sys.executable, str(copy / "scripts" / "build_layers.py"), "dependencies", str(target)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and not target.exists()
    assert out.stderr.startswith("The layers' locks are stale; nothing was built:")
    assert "requirements/lambda.txt was not made from the current inputs" in out.stderr
    assert "run `make lock`" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("layer", ["dependencies", "openai"])
def test_the_layer_build_installs_exactly_its_lock_hash_checked(copy, layer):
    """The pip command the build runs, on a lock that names one small wheel: its pin, its hash, nothing else."""
    locks = load_locks(copy)
    lock = locks.DEPENDENCIES_LAYER if layer == "dependencies" else locks.OPENAI_LAYER
    pins = locks.parse_requirements(lock)
    name = min(pins, key=lambda n: (len(pins[n]["hashes"]), n))  # a pure wheel: small
    spec = importlib.util.spec_from_file_location("build_layers_copy", copy / "scripts" / "build_layers.py")
    sys.path.insert(0, str(copy / "scripts"))
    try:
        build_layers = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(build_layers)
    finally:
        sys.path.remove(str(copy / "scripts"))
        sys.modules.pop("locks", None)
    single = copy / "single.txt"
    single.write_text("\n".join(pins[name]["block"]) + "\n")
    try:
        installed = build_layers.install(single, copy / "layer")
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"the package index is unreachable from here ({exc})")
    assert [locks.canonical(n) for n in installed] == [name]
    # A hash that is not the file's: pip refuses the file.
    single.write_text(re.sub(r"sha256:[0-9a-f]{64}", "sha256:" + "0" * 64, single.read_text()))
    with pytest.raises(subprocess.CalledProcessError):
        build_layers.install(single, copy / "other")


def test_the_layer_locks_are_resolved_for_the_runtime_the_template_deploys():
    """Moving the functions to another Python or architecture means resolving the layers for it."""
    from incident_responder.lab.template import load_template

    template = load_template()
    locks = load_locks(REPO)
    globals_ = template["Globals"]["Function"]
    assert globals_["Runtime"] == f"python{locks.LAYER_PYTHON}"
    assert locks.LAYER_PLATFORM.startswith(f"{globals_['Architectures'][0]}-manylinux_")
    layers = [r for r in template["Resources"].values() if r["Type"] == "AWS::Serverless::LayerVersion"]
    assert layers and all(r["Properties"]["CompatibleRuntimes"] == [globals_["Runtime"]] for r in layers)


def test_unreadable_inputs_are_named_not_a_traceback(copy):
    (copy / "pyproject.toml").write_text("[project\nname = 'x'\n")
    (problem,) = load_locks(copy).check()
    assert problem.startswith("the locks' inputs cannot be read (TOMLDecodeError") and "make lock" in problem


def _wheel(folder: Path, name: str, requires_python: str) -> Path:
    """A minimal pure wheel (PEP 427) whose metadata requires ``requires_python``."""

    files = {
        f"{name}/__init__.py": "",
        f"{name}-1.0.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\nRequires-Python: {requires_python}\n",
        f"{name}-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [
        f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},{len(text)}"
        for path, text in files.items()
    ]
    files[f"{name}-1.0.dist-info/RECORD"] = "\n".join([*record, f"{name}-1.0.dist-info/RECORD,,"]) + "\n"
    wheel = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def test_the_layer_build_installs_what_the_runtime_python_may_run_whatever_python_builds(copy, monkeypatch):
    """The lock settled Requires-Python for the runtime: a newer requirement than the building Python's is
    installed anyway. pip alone refuses it when an index publishes the wheel's metadata (PEP 658, as PyPI
    does): it holds that against the interpreter it runs on, --python-version or not."""

    newer = f">={sys.version_info.major}.{sys.version_info.minor + 1}"
    project = copy / "simple" / "newer-only"
    project.mkdir(parents=True)
    wheel = _wheel(project, "newer_only", newer)
    metadata = f"Metadata-Version: 2.1\nName: newer_only\nVersion: 1.0\nRequires-Python: {newer}\n"
    Path(f"{wheel}.metadata").write_text(metadata)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    metadata_digest = hashlib.sha256(metadata.encode()).hexdigest()
    (project / "index.html").write_text(
        f'<a href="{wheel.name}#sha256={digest}" data-requires-python="{html.escape(newer)}" '
        f'data-dist-info-metadata="sha256={metadata_digest}" data-core-metadata="sha256={metadata_digest}">{wheel.name}</a>'
    )
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", (copy / "simple").as_uri())
    lock = copy / "one.txt"
    lock.write_text(f"newer-only==1.0 --hash=sha256:{digest}\n")
    # With the Python `sam build` runs the Makefile's layer targets with (PYTHON, python3 by default) and its pip.
    python = shutil.which(os.environ.get("PYTHON", "python3")) or sys.executable
    out = subprocess.run(
        [python, "-c", f"import build_layers; print(build_layers.install({str(lock)!r}, {str(copy / 'layer')!r}))"],
        cwd=copy / "scripts",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.stdout.strip() == "['newer_only']", out.stderr[-2000:]
