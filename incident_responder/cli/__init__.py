"""``responder``: the operator's command line (show, report, doctor, ...) and, in a development install, the lab's.

commands    the entry point (main): parses the command line, runs one command, hands the lab's to the lab
arguments   the parser classes every command shares (the lab's too), and which commands are the lab's
onboarding  ``onboard``, ``check-alert``, ``doctor``: before an incident
incidents   ``investigate``, ``show``, ``report``, ``pending``, ``approve``: an incident
mcp_tools   ``mcp serve``, ``mcp call``: the project's MCP servers
doctor      ``responder doctor``: whether this setup can work, one line per check
"""

from incident_responder.core.exports import lazy_exports

__all__ = ["main"]
__getattr__ = lazy_exports(__name__, {"commands": ["main"]})
