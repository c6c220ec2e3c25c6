"""``responder chaos ...`` / ``python -m chaos ...``: inject faults into a Lambda function, and restore.

One subcommand per chaos kind of the registry (:mod:`chaos.kinds`), one option per parameter of its model."""

from __future__ import annotations

import argparse
import json
import sys
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from botocore.exceptions import BotoCoreError, ClientError

from chaos.kinds import KINDS, ChaosKind
from chaos.kinds.base import DATA_PROCESSOR

DESCRIPTION = """\
Inject faults into a Lambda function's account state, then put everything back.

Targets the account boto3 reaches by default: a real account (your usual profile and region), or the
embedded lab when AWS_ENDPOINT_URL points at it (`responder lab up` prints what to export).
Before changing anything, each fault records the original values in a local state file; injecting
twice changes nothing more, and `restore` puts back exactly what was there.

examples:
{examples}
  responder chaos apply scenarios/s3-policy-revoked.yaml
  responder chaos status
  responder chaos restore
"""


def _option(field: str) -> str:
    return "--" + field.replace("_", "-")


def _example(kind: ChaosKind[Any]) -> str:
    """A command line that injects ``kind`` into a sample workload it applies to (a parameter's choices, else the
    kind's example value)."""
    words = ["responder chaos"]
    if DATA_PROCESSOR not in kind.workloads:
        words.append(f"--function {sorted(kind.workloads)[0]}")
    words.append(kind.name)
    for field, value in kind.example.items():
        choices = _argument(kind.parameters.model_fields[field].annotation).get("choices")
        words.append(f"{_option(field)} {'|'.join(map(str, choices)) if choices else value}")
    return "  " + " ".join(words)


def _argument(annotation: Any) -> dict[str, Any]:
    """argparse's type (and choices) for a parameter's annotation: int, str, a Literal, or one of those or None."""
    if get_origin(annotation) in (Union, types.UnionType):
        (annotation,) = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) is Literal:
        choices = list(get_args(annotation))
        return {"type": type(choices[0]), "choices": choices}
    return {"type": annotation}


def add_kind(sub: Any, kind: ChaosKind[Any]) -> None:
    """The kind's subcommand: an option per parameter, with the kind's default or required when it has none."""
    p = sub.add_parser(kind.name, help=kind.help)
    for field in kind.parameter_names():
        info = kind.parameters.model_fields[field]
        options: dict[str, Any] = _argument(info.annotation)
        if field in kind.defaults:
            options["default"] = kind.defaults[field]
        elif info.is_required():
            options["required"] = True
        else:
            options["default"] = info.default
        if field in kind.argument_help:
            options["help"] = kind.argument_help[field]
        p.add_argument(_option(field), **options)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION.format(examples="\n".join(_example(kind) for kind in KINDS.values()))
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--function", default="data-processor", help="function name or ARN (default: data-processor)")
    parser.add_argument("--state-dir", type=Path, help="where originals are kept (default: ~/.local/state/...)")
    sub = parser.add_subparsers(dest="fault", required=True, metavar="COMMAND")
    for kind in KINDS.values():
        add_kind(sub, kind)
    p = sub.add_parser("apply", help="apply the faults listed in a scenario file, in order")
    p.add_argument("scenario", type=Path)
    sub.add_parser("status", help="show what is injected and the originals kept")
    sub.add_parser("restore", help="put back every original value and forget them")


def run(args: argparse.Namespace) -> int:
    from chaos.errors import ChaosError
    from chaos.faults import FaultInjector
    from chaos.scenario import ScenarioError, load_faults

    try:
        if args.fault == "apply":
            scenario = load_faults(args.scenario)
            function = scenario.workload.function
            injector = FaultInjector.for_function(function, state_dir=args.state_dir)
            for fault in scenario.faults:
                for line in injector.apply(fault):
                    print(f"{fault.kind}: {line}")
            return 0
        injector = FaultInjector.for_function(args.function, state_dir=args.state_dir)
        if args.fault == "status":
            print(json.dumps(injector.status(), indent=2))
            return 0
        if args.fault == "restore":
            lines = injector.restore()
        else:
            params = {field: getattr(args, field) for field in KINDS[args.fault].parameter_names()}
            lines = injector.inject(args.fault, **params)
    except (ChaosError, ScenarioError, ValueError) as exc:
        print(f"chaos: {exc}", file=sys.stderr)
        return 2
    except (ClientError, BotoCoreError) as exc:
        print(f"chaos: AWS refused or could not be reached: {exc}", file=sys.stderr)
        return 1
    for line in lines:
        print(f"{args.fault}: {line}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos")
    add_arguments(parser)
    return run(parser.parse_args(argv))
