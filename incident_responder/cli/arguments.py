"""Every ``responder`` command: the parser classes the operator's and the lab's commands share, and which
commands are the lab's (their parsers are the lab's own, :mod:`incident_responder.lab.cli`)."""

from __future__ import annotations

import argparse
from typing import Any

# Run by the lab's own parsers (incident_responder.lab.cli), imported only when one of them is run.
LAB_COMMANDS = {
    "demo": "start the lab, break the sample workload, follow the incident to its end",
    "run": "run one scenario file in a fresh lab and print the final incident record",
    "eval": "run every scenario file in DIR (or one scenario file) in a fresh lab and score it",
    "lab": "the embedded AWS lab (up, invoke)",
    "chaos": "inject faults into a function and restore them",
}


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions keep their line breaks; an option's help ends with its default when it has one."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if "default" in text or default in (None, False, [], argparse.SUPPRESS) or not action.option_strings:
            return action.help  # said already, or nothing to say
        return f"{text} (default: %(default)s)" if text else "default: %(default)s"


class ArgumentParser(argparse.ArgumentParser):
    """Every command and subcommand of ``responder`` (argparse makes subcommands of the parent's class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def tcp_port(text: str) -> int:
    """An argument that is a TCP port to listen on (1-65535): any other number is an argument error here, before
    anything starts, rather than bind()'s OverflowError once a server or the lab is half up."""
    port = int(text) if text.isascii() and text.isdigit() and len(text) <= 5 else 0
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"not a TCP port (1-65535): {text[:20]!r}")
    return port
