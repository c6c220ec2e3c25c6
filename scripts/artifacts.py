"""What `sam build` produced, as Lambda counts it: each artifact's size, and each function's deployment.

    python scripts/artifacts.py [BUILD_DIR]                  # sizes (default .aws-sam/build)
    python scripts/artifacts.py [BUILD_DIR] --import-time    # also handler import times, as deployed

Lambda's quota is on the unzipped size of a function's code plus all its layers (250 MB, in MiB:
262,144,000 bytes); the project keeps every function's deployment within DEPLOYMENT_BUDGET.
Zipped sizes are those of the archives `sam package` uploads (deflate, as it writes them).

Import times are measured as Lambda would see the artifacts: each one zipped as `sam package` zips it
(every entry dated 1980-01-01), extracted, and imported with python3.12 without writing bytecode (Lambda's
code and layers are read-only): the figures count how many modules had to be compiled from source
because no usable .pyc came with them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MIB = 2**20
LAMBDA_LIMIT = 250 * MIB
DEPLOYMENT_BUDGET = 150 * MIB
# Each function's handler module (the agents first): what --import-time imports.
HANDLERS = {
    "InvestigateFunction": "handlers.investigate",
    "ProposeFunction": "handlers.propose",
    "ReviewFunction": "handlers.review",
    "IngestFunction": "handlers.ingest",
}


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def zip_like_sam(root: Path, dest: Any) -> None:
    """Write ``root`` as `sam package` does (samcli make_zip: bare ZipInfo entries, so dated 1980-01-01)."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in _files(root):
            info = zipfile.ZipInfo(str(path.relative_to(root)))
            info.external_attr = 0o100755 << 16
            archive.writestr(info, path.read_bytes(), compress_type=zipfile.ZIP_DEFLATED)


def artifact_sizes(build_dir: Path, *, zipped: bool = True) -> list[dict]:
    """One entry per artifact of ``build_dir`` (a sam build output): name, kind, bytes unzipped, files, and
    bytes zipped (None when ``zipped`` is false: compressing the layers takes a few seconds)."""
    sizes = []
    for artifact in sorted(p for p in build_dir.iterdir() if p.is_dir()):
        files = _files(artifact)
        entry = {
            "name": artifact.name,
            "kind": "layer" if (artifact / "python").is_dir() else "function",
            "bytes": sum(p.stat().st_size for p in files),
            "files": len(files),
            "pyc_bytes": sum(p.stat().st_size for p in files if p.suffix == ".pyc"),
            "zipped_bytes": None,
        }
        if zipped:
            with tempfile.TemporaryFile() as sink:
                zip_like_sam(artifact, sink)
                entry["zipped_bytes"] = sink.tell()
        sizes.append(entry)
    return sizes


def _layer_ids(value: Any) -> list[str]:
    """The layers a Layers entry may attach: both branches of an Fn::If (the larger deployment counts)."""
    if isinstance(value, list):
        return [layer for item in value for layer in _layer_ids(item)]
    if isinstance(value, dict) and "Ref" in value:
        return [] if value["Ref"] == "AWS::NoValue" else [value["Ref"]]
    if isinstance(value, dict) and "Fn::If" in value:
        return _layer_ids(value["Fn::If"][1:])
    return []


def deployments(build_dir: Path, template: Path | None = None) -> list[dict]:
    """Each function of the template with every layer it may get, and their unzipped total (largest first)."""
    from incident_responder.lab.template import load_template  # the lab's reader of template.yaml's short tags

    template = template or (build_dir / "template.yaml" if (build_dir / "template.yaml").exists() else None)
    document = load_template(template or REPO / "template.yaml")
    common = _layer_ids(document.get("Globals", {}).get("Function", {}).get("Layers", []))
    sizes = {entry["name"]: entry["bytes"] for entry in artifact_sizes(build_dir, zipped=False)}
    found = []
    for logical_id, resource in document["Resources"].items():
        if resource.get("Type") != "AWS::Serverless::Function" or logical_id not in sizes:
            continue
        layers = list(dict.fromkeys(common + _layer_ids(resource.get("Properties", {}).get("Layers", []))))
        total = sizes[logical_id] + sum(sizes[layer] for layer in layers)
        found.append({"function": logical_id, "layers": layers, "bytes": total})
    return sorted(found, key=lambda d: (-d["bytes"], d["function"]))


def runtime_python() -> str | None:
    """A python3.12 (the functions' runtime) to import the artifacts with."""
    found = sorted(Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))
    return str(found[-1]) if found else shutil.which("python3.12")


_IMPORT = """
import importlib._bootstrap_external as external, sys, time
compiled = 0
source_to_code = external.SourceLoader.source_to_code
def counting(*args, **kwargs):
    global compiled
    compiled += 1
    return source_to_code(*args, **kwargs)
external.SourceLoader.source_to_code = counting
sys.path[:0] = {paths!r}
wall, cpu = time.perf_counter(), time.process_time()
import {module}
print(time.perf_counter() - wall, time.process_time() - cpu, compiled, len(sys.modules))
"""


def import_times(build_dir: Path, function: str, modules: list[str], *, runs: int = 5) -> list[dict]:
    """Median import time of each module from ``function`` with all its layers, deployed as Lambda would be."""
    python = runtime_python()
    if python is None:
        raise RuntimeError("no python3.12 to import the artifacts with")
    deployment = next(d for d in deployments(build_dir) if d["function"] == function)
    with tempfile.TemporaryDirectory() as work:
        paths = []
        for artifact in [function, *deployment["layers"]]:
            archive = Path(work, f"{artifact}.zip")
            zip_like_sam(build_dir / artifact, archive)
            target = Path(work, artifact)
            with zipfile.ZipFile(archive) as extracted:
                extracted.extractall(target)
                for info in extracted.infolist():  # the dates the archive carries (1980)
                    stamp = time.mktime((*info.date_time, 0, 0, -1))
                    os.utime(target / info.filename, (stamp, stamp))
            paths.append(str(target / "python") if (target / "python").is_dir() else str(target))
        env = {"PATH": os.environ["PATH"], "PYENV_VERSION": "3.12", "AWS_DEFAULT_REGION": "us-east-1"}
        results = []
        for module in modules:
            samples = []
            for _ in range(runs):
                out = subprocess.run(
                    # -B: nothing compiled at import may be written back (Lambda's file systems are read-only)
                    [python, "-I", "-B", "-c", _IMPORT.format(paths=paths, module=module)],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                if out.returncode != 0:
                    raise RuntimeError(f"import {module} failed: {out.stderr[-2000:]}")
                samples.append([float(value) for value in out.stdout.split()])
            wall, cpu, compiled, loaded = (statistics.median(sample[i] for sample in samples) for i in range(4))
            results.append(
                {"module": module, "wall_s": wall, "cpu_s": cpu, "compiled": int(compiled), "modules": int(loaded)}
            )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir", nargs="?", default=str(REPO / ".aws-sam" / "build"))
    parser.add_argument("--no-zip", action="store_true", help="skip the zipped sizes")
    parser.add_argument("--import-time", action="store_true", help="time the handlers' imports as deployed")
    args = parser.parse_args(argv)
    build_dir = Path(args.build_dir)
    if not build_dir.is_dir():
        print(f"{build_dir}: no sam build output (run `make build`)", file=sys.stderr)
        return 1
    print(f"{'artifact':28} {'kind':8} {'MiB':>7} {'zipped':>7} {'.pyc':>6} {'files':>6}")
    for entry in artifact_sizes(build_dir, zipped=not args.no_zip):
        zipped = "-" if entry["zipped_bytes"] is None else f"{entry['zipped_bytes'] / MIB:.1f}"
        print(
            f"{entry['name']:28} {entry['kind']:8} {entry['bytes'] / MIB:7.1f} {zipped:>7} "
            f"{entry['pyc_bytes'] / MIB:6.1f} {entry['files']:6}"
        )
    print(f"\nfunction + every layer it may get, unzipped (budget {DEPLOYMENT_BUDGET / MIB:.0f} MiB):")
    for deployment in deployments(build_dir):
        print(f"{deployment['function']:28} {deployment['bytes'] / MIB:7.1f}  {' + '.join(deployment['layers'])}")
    if args.import_time:
        print("\nimport as deployed, median of 5 (python3.12): wall s, cpu s, modules compiled from source / loaded")
        for function, module in HANDLERS.items():
            for result in import_times(build_dir, function, [module, "boto3"]):
                print(
                    f"{function:28} {result['module']:22} {result['wall_s']:6.3f} {result['cpu_s']:6.3f} "
                    f"{result['compiled']:5} / {result['modules']}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
