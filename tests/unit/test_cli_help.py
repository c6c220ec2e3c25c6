"""`responder ... --help`: every command and subcommand says what each option defaults to."""

from __future__ import annotations

import argparse

import pytest

from incident_responder.cli.commands import build_parser
from incident_responder.lab import cli as lab_cli


def _parsers() -> list[argparse.ArgumentParser]:
    found, todo = [], [build_parser(), *(lab_cli.build_parser(c) for c in lab_cli.LAB_COMMANDS)]
    while todo:
        parser = todo.pop()
        found.append(parser)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo.extend(action.choices.values())
    return found


PARSERS = _parsers()


@pytest.mark.parametrize("parser", PARSERS, ids=[p.prog for p in PARSERS])
def test_every_option_with_a_default_says_it(parser):
    text = parser.format_help()
    assert text.startswith("usage: ")
    for action in parser._actions:
        if not action.option_strings or action.default in (None, False, [], argparse.SUPPRESS) or not action.help:
            continue
        shown = parser._get_formatter()._expand_help(action) if action.help else ""
        assert "default" in shown, f"{parser.prog} {action.option_strings[0]}: {shown!r}"
        assert str(action.default) in shown, (parser.prog, action.option_strings, shown)


def test_the_whole_command_tree_is_covered():
    progs = {p.prog for p in PARSERS}
    assert {"responder", "responder show", "responder eval", "responder lab", "responder mcp serve"} <= progs
