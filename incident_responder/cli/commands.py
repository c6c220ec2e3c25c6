"""``responder``: the project's command line.

Operator commands (production code only, for the lab or a real account):
  responder onboard FUNCTION                       record a function's baseline
  responder check-alert FILE... [--json]           what ingest would do with each alarm notification
  responder investigate ALERT.json                 run the investigator agent on one alert
  responder show INCIDENT_ID [--transcript]        print a stored incident (and what each agent said)
  responder report INCIDENT_ID                     write its HTML report (out/INCIDENT_ID/report.html)
  responder pending                                incidents awaiting approval
  responder approve INCIDENT_ID [--reject]         decide on them, with your own credentials
  responder rollback INCIDENT_ID                   undo what an ended incident left applied (fenced)
  responder runbook set|list|show|remove ...       a function's or a catalogue entry's runbook
  responder mcp serve diagnostics --port N         run an MCP server (bearer key)
  responder mcp call URL TOOL key=value ...        call one MCP tool (bearer key or SigV4)

Lab commands (the embedded lab; `responder COMMAND --help` for each):
  responder demo                                   the main job on the embedded lab
  responder run SCENARIO.yaml                      one scenario in a fresh lab
  responder eval DIR | FILE                        score every scenario in DIR, or one
  responder lab up | invoke                        run the lab for other processes / one burst
  responder chaos COMMAND ...                      inject faults / restore
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys

from incident_responder.cli import incidents, mcp_tools, onboarding, runbooks
from incident_responder.cli.arguments import LAB_COMMANDS, ArgumentParser

# What the `lab` extra (pyproject.toml) installs, by import name: `pip install .` leaves them out.
LAB_EXTRA_MODULES = ("moto", "jsonata", "samtranslator")


def _cmd_lab(args: argparse.Namespace) -> int:
    """A lab command: handed to the lab's own parser, imported only now."""
    from incident_responder.lab.cli import main as lab_main

    return lab_main(args.command, args.rest)


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="responder", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    onboarding.add_commands(sub)
    incidents.add_commands(sub)
    mcp_tools.add_commands(sub)
    runbooks.add_commands(sub)

    for command, help_text in LAB_COMMANDS.items():
        # Its arguments (--help included) are left for the lab's own parser.
        sub.add_parser(command, help=help_text, add_help=False).set_defaults(handler=_cmd_lab)
    return parser


def _table_variables() -> str:
    """Each table variable's value, or that it is not set and which default name stood in for it: the unset one
    is the one to set, so it is named too."""
    from incident_responder.account.baseline import DEFAULT_BASELINE_TABLE
    from incident_responder.core.settings import StoreSettings

    defaults = {
        "INCIDENT_STATE_TABLE": StoreSettings.model_fields["incident_state_table"].default,
        "INCIDENT_CONTEXT_TABLE": StoreSettings.model_fields["incident_context_table"].default,
        "BASELINE_TABLE": DEFAULT_BASELINE_TABLE,
    }
    return ", ".join(
        f"{name}={os.environ[name]}" if os.environ.get(name) else f"{name} is not set (so {default} was used)"
        for name, default in defaults.items()
    )


def explain(exc: BaseException) -> tuple[str, int] | None:
    """One line and an exit code for an error the user can fix; None for anything else (a bug keeps its traceback)."""
    import botocore.exceptions as boto
    import httpx

    from incident_responder.account.errors import ForeignFunctionError, InvalidFunctionNameError
    from incident_responder.agent import errors as agent_errors
    from incident_responder.approval.errors import ApprovalError
    from incident_responder.core.settings import ConfigurationError
    from incident_responder.memory.runbooks import RunbookError

    if isinstance(exc, RunbookError):  # a runbook refused, or none: the message says which and why
        return str(exc), exc.exit_code
    if isinstance(exc, ApprovalError):  # refusals of a decision: the message says why
        return str(exc), 1
    if isinstance(exc, InvalidFunctionNameError | ForeignFunctionError):
        return str(exc), 2
    from incident_responder.core.members import MemberAccessError, NotAMemberError

    if isinstance(exc, NotAMemberError | MemberAccessError):  # a member account that is not one, or not reachable
        return str(exc), 2
    if isinstance(exc, boto.ProfileNotFound):
        return f"{exc} (a profile of ~/.aws/config or ~/.aws/credentials)", 2
    if isinstance(exc, ConfigurationError):  # a setting in the environment: each variable and what is wrong with it
        problems = "; ".join(line.strip() for line in str(exc).splitlines()[1:])
        return f"the environment is not usable: {problems}", 2
    lab_hint = "is the lab running (responder lab up), and are its printed export lines set in this shell?"
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in LAB_EXTRA_MODULES:
        return (
            f"the embedded lab needs the 'lab' extra, and {exc.name} is not installed: in the repository run "
            "pip install -e '.[lab]' (or make demo, which sets everything up)",
            2,
        )
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}", 2
    if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
        return exc.strerror or str(exc), 1
    if isinstance(exc, boto.NoRegionError):
        return "no AWS region: set AWS_REGION (for the lab, the export lines `responder lab up` prints)", 1
    if isinstance(exc, boto.NoCredentialsError | boto.PartialCredentialsError):
        return (
            "no AWS credentials found: set AWS_PROFILE or access keys "
            "(for the lab, the export lines `responder lab up` prints)",
            1,
        )
    if isinstance(exc, boto.EndpointConnectionError):
        where = f" (AWS_ENDPOINT_URL={os.environ['AWS_ENDPOINT_URL']})" if os.environ.get("AWS_ENDPOINT_URL") else ""
        return f"cannot connect to {exc.kwargs.get('endpoint_url')}{where}: {lab_hint}", 1
    if isinstance(exc, boto.ClientError):
        error = exc.response.get("Error", {})
        line = f"{exc.operation_name} failed: {error.get('Code')}: {error.get('Message')}"
        if error.get("Code") == "ResourceNotFoundException":
            line += f" (tables from the environment: {_table_variables()}; use the stack's outputs)"
        return line, 1
    if isinstance(exc, boto.BotoCoreError):
        return str(exc), 1
    if type(exc).__module__ == agent_errors.__name__:  # the typed MCP and model failures; they name the server
        return f"{type(exc).__name__}: {exc}", 1
    if isinstance(exc, httpx.TransportError):
        return f"cannot connect: {type(exc).__name__}: {exc}", 1
    # The OpenAI client refuses to be built without a key (OPENAI_API_KEY): a setting, not a bug. Its API errors
    # (APIError) happen during a call, where the agent's own errors name them; anything else it raises is a bug.
    openai = sys.modules.get("openai")
    if openai is not None and type(exc) is openai.OpenAIError:
        return f"the OpenAI-compatible model's client: {exc}", 2
    return None


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if args.handler is _cmd_lab:
        args.rest = rest
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    # The one place where known errors become one line on stderr instead of a traceback.
    try:
        code = args.handler(args)
        sys.stdout.flush()  # a reader gone away shows here, not in the interpreter's own flush at exit
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as any shell tool does (128 + SIGPIPE). What is still
        # buffered goes to /dev/null, or the interpreter's flush at exit would raise again.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:
        explained = explain(exc)
        if explained is None:
            raise
        message, code = explained
        command = " ".join(
            filter(None, (args.command, getattr(args, "mcp_command", None), getattr(args, "runbook_command", None)))
        )
        print(f"responder {command}: {message}", file=sys.stderr)
        return code
