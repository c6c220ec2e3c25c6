"""One agent run over an in-memory tool provider, as the graph tests drive it."""

from __future__ import annotations

import anyio

from incident_responder.agent.graph import run_agent
from incident_responder.agent.spec import Limits
from incident_responder.investigation.investigator import INVESTIGATOR
from tests.fakes import logs_provider


def run(model, provider=None, limits=None, remaining_ms=None):
    provider = provider or logs_provider()
    limits = limits or Limits()
    return anyio.run(
        lambda: run_agent(
            INVESTIGATOR, model, provider, "<incident>{}</incident>", limits=limits, remaining_ms=remaining_ms
        )
    ), provider
