"""``responder runbook set|list|show|remove``: a team's runbooks for a function or a catalogue entry, in the
artifacts bucket (ARTIFACTS_BUCKET, the stack's output ArtifactsBucketName; ``responder lab up`` exports it)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def _bucket() -> str:
    from incident_responder.core.settings import StoreSettings
    from incident_responder.memory.runbooks import RunbookError

    bucket = StoreSettings.current().artifacts_bucket
    if not bucket:
        raise RunbookError(
            "ARTIFACTS_BUCKET is not set: set it to the stack's output ArtifactsBucketName (for the lab, the export "
            "lines `responder lab up` prints)"
        )
    return bucket


def _scope(args: argparse.Namespace):
    from incident_responder.memory.runbooks import function_scope, mode_scope

    return function_scope(args.function) if args.function is not None else mode_scope(args.mode)


def _cmd_set(args: argparse.Namespace) -> int:
    from pathlib import Path

    from incident_responder.core.aws import AwsClients
    from incident_responder.memory.runbooks import MAX_BYTES, store

    scope = _scope(args)
    with sys.stdin.buffer if args.file == "-" else Path(args.file).open("rb") as source:
        data = source.read(MAX_BYTES + 1)  # one byte past the limit is enough to refuse it
    stored = store(AwsClients(), _bucket(), scope, data)
    print(f"stored runbook {stored.scope} ({len(data)} bytes, sha256 {stored.digest})")
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from incident_responder.core.aws import AwsClients
    from incident_responder.memory.runbooks import list_runbooks

    listed = list_runbooks(AwsClients(), _bucket())
    if not listed:
        print("no runbooks (responder runbook set --function NAME FILE)")
    for runbook in listed:
        print(f"{runbook.scope}\t{runbook.size} bytes\tsha256 {runbook.digest or '(none)'}\t{runbook.last_modified}")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from incident_responder.core.aws import AwsClients
    from incident_responder.memory.runbooks import RunbookNotFoundError, load

    scope = _scope(args)
    runbook = load(AwsClients(), _bucket(), scope)
    if runbook is None:
        raise RunbookNotFoundError(f"no runbook for {scope}")
    print(f"# {runbook.citation}", file=sys.stderr)  # stdout is the stored text, byte for byte
    sys.stdout.write(runbook.text)
    return 0


def _cmd_remove(args: argparse.Namespace) -> int:
    from incident_responder.core.aws import AwsClients
    from incident_responder.memory.runbooks import remove

    scope = _scope(args)
    remove(AwsClients(), _bucket(), scope)
    print(f"removed runbook {scope}")
    return 0


def _scoped(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--function", metavar="NAME", help="the runbook of this Lambda function")
    which.add_argument("--mode", metavar="ID", help="the runbook of this catalogue entry (docs/failure-catalogue.md)")


def add_commands(sub: Any) -> None:
    """``runbook`` and its subcommands, on ``responder``'s subcommands."""
    p = sub.add_parser(
        "runbook",
        help="a team's runbooks for a function or a catalogue entry (set, list, show, remove)",
        description="Runbooks are Markdown (UTF-8, at most 16 KiB, no control characters but newlines and tabs) "
        "kept in the artifacts bucket (ARTIFACTS_BUCKET) with their sha256 digest. The investigator reads them "
        "through get_runbook and a hand-over cites them; they guide people and never authorise a change.",
    )
    runbook = p.add_subparsers(dest="runbook_command", required=True, metavar="SUBCOMMAND")
    s = runbook.add_parser("set", help="store FILE as the runbook (replacing any)")
    _scoped(s)
    s.add_argument("file", metavar="FILE", help="a Markdown file, or - for standard input")
    s.set_defaults(handler=_cmd_set)
    s = runbook.add_parser("list", help="every stored runbook: scope, size, digest, when stored")
    s.set_defaults(handler=_cmd_list)
    s = runbook.add_parser("show", help="print a runbook (refused when it no longer matches its digest)")
    _scoped(s)
    s.set_defaults(handler=_cmd_show)
    s = runbook.add_parser("remove", help="delete a runbook")
    _scoped(s)
    s.set_defaults(handler=_cmd_remove)
