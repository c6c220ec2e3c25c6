"""``responder``: the operator's command line (show, report, doctor, ...) and, in a development install, the lab's.

commands  the entry point (main): parses the command line and runs one command
doctor    ``responder doctor``: whether this setup can work, one line per check
"""

from incident_responder.cli.commands import main

__all__ = ["main"]
