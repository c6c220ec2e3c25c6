"""The model's side of the lab: where an eval's model calls go when they travel over Converse: forwarded to the user's model (and recorded), or
replayed from a recording with no model and no credentials.

    responder eval scenarios --model bedrock_converse:ID --record cassettes/ID   # the real model; one file a scenario
    responder eval scenarios --replay cassettes/ID                               # the same run, offline

The agent functions reach a local :class:`~incident_responder.lab.converse.gateway.ConverseGateway` through
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, as they would Bedrock:

* **forwarding** (every ``bedrock_converse:`` eval): :class:`ForwardBackend` re-sends each call to the user's endpoint
  with the user's credentials, never retrying (the function's own client retries; each attempt is an exchange), and
  refuses a call that could take the run past its spend ceiling (:class:`SpendCeiling`);
* **recording** (``--record DIR``): after each scenario its exchanges go to ``DIR/<scenario>.json`` (a *cassette*:
  each request, and the answer or the error it got);
* **replaying** (``--replay DIR``): :class:`ReplayBackend` answers from the cassette. A request is matched to a
  recorded one by the agent making it (its system prompt and tool names) and by its *shape*: each message's role and
  blocks, the tools called with their arguments, each tool result's id and status, the inference settings. Never by
  cache points (they change the bill, not the answer) or by text a run changes on its own (incident ids,
  timestamps, request ids in tool output). A request that matches nothing is a *departure*: it is answered with an
  error naming where it departed (the incident ends ERROR, not retried), and the scenario fails with it, as it does
  when recorded calls are left unused.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from incident_responder.agent.model_catalog import Prices, prices
from incident_responder.lab.converse.cassettes import Cassette, ReplayBackend, cassette_path
from incident_responder.lab.converse.errors import CassetteError
from incident_responder.lab.converse.forwarding import ForwardBackend, SpendCeiling
from incident_responder.lab.converse.gateway import ConverseGateway
from incident_responder.lab.model_route import ModelRoute, resolve_model_route

REPLAY_PROFILE = "responder-replay"


# -- an eval's model calls ---------------------------------------------------------------------------------
def cost_bound(scenarios: int, found: Prices) -> float:
    """What ``scenarios`` incidents may cost at most: three agents each, each stopping after the turn that reaches
    AgentTokenCap (counted as twice the cap), its output at most AgentRecursionLimit answers of 4,096 tokens."""
    from incident_responder.lab.template import load_template

    parameters = load_template()["Parameters"]
    cap, turns = (int(parameters[name]["Default"]) for name in ("AgentTokenCap", "AgentRecursionLimit"))
    output = min(2 * cap, turns * 4096)
    per_agent = (output * found.output + (2 * cap - output) * max(found.input, found.cache_write)) / 1e6
    return round(scenarios * 3 * per_agent, 2)


class EvalModel:
    """The model of one eval run: its route for the lab, and, over Converse, the gateway between them."""

    def __init__(
        self,
        model: str | None,
        scenarios: list[str],
        *,
        record: Path | None = None,
        replay: Path | None = None,
        max_cost_usd: float | None = None,
    ):
        self.gateway: ConverseGateway | None = None
        self.record, self.replay = record, replay
        self.cassettes: dict[str, Cassette] = {}
        self.backend: ReplayBackend | None = None
        self.ceiling: SpendCeiling | None = None
        if record and replay:
            raise CassetteError("--record and --replay: one or the other")
        if replay is not None:
            self._open_replay(model, scenarios, replay)
            return
        self.model = model or "offline"
        self.route = resolve_model_route(self.model)  # before the lab replaces the environment
        if not self.model.startswith("bedrock_converse:"):
            if record is not None:
                raise CassetteError(f"--record needs a bedrock_converse: model (not {self.model})")
            if max_cost_usd is not None:
                raise CassetteError(f"--max-cost needs a bedrock_converse: model (not {self.model})")
            return
        found = prices(self.model)
        if max_cost_usd is None and found is not None:
            max_cost_usd = cost_bound(len(scenarios), found)
        if max_cost_usd is not None:
            if found is None:
                raise CassetteError(
                    "--max-cost needs the model's prices: set PRICE_PER_MTOK_INPUT and PRICE_PER_MTOK_OUTPUT"
                )
            self.ceiling = SpendCeiling(max_cost_usd, found)
        endpoint = self.route.environment["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"]
        self.region = self.route.environment["BEDROCK_REGION"]
        forward = ForwardBackend(endpoint, self.region, self.route.credentials, self.ceiling)
        self.gateway = ConverseGateway(forward).__enter__()
        self.route.environment["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"] = self.gateway.url
        self.route.description = f"{endpoint} in {self.region} (through {self.gateway.url}), your credentials"

    def _open_replay(self, model: str | None, scenarios: list[str], directory: Path) -> None:
        if not directory.is_dir():
            raise CassetteError(f"{directory}: no such folder of cassettes")
        self.cassettes = {name: Cassette.load(cassette_path(directory, name)) for name in scenarios}
        models = {c.model for c in self.cassettes.values()}
        if len(models) > 1:
            raise CassetteError(f"{directory}: cassettes of several models ({', '.join(sorted(models))})")
        (self.model,) = models
        if model not in (None, self.model):
            raise CassetteError(f"{directory} was recorded with {self.model}, not {model}")
        self.region = next(iter(self.cassettes.values())).region
        self.gateway = ConverseGateway(lambda *_: {}).__enter__()  # each scenario's backend set by begin()
        folder = tempfile.TemporaryDirectory(prefix="lab-replay-")
        credentials = Path(folder.name) / "credentials"
        credentials.write_text(f"[{REPLAY_PROFILE}]\naws_access_key_id = replay\naws_secret_access_key = replay\n")
        self.route = ModelRoute(
            environment={
                "BEDROCK_PROFILE": REPLAY_PROFILE,
                "BEDROCK_REGION": self.region,
                "AWS_SHARED_CREDENTIALS_FILE": str(credentials),
                "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": self.gateway.url,
            },
            description=f"replayed from {directory} (no model, no credentials)",
            _directory=folder,
        )

    def describe(self, scenarios: int) -> str:
        """A line to print before the run starts: where the calls go, and what the run may cost at most."""
        line = f"model: {self.model}, {self.route.description}"
        if self.record is not None:
            line += f"; recording to {self.record}/"
        if self.ceiling is not None:
            line += (
                f"; at most ${self.ceiling.limit_usd:.2f} for {scenarios} scenario(s) at ${self.ceiling.prices.input:.2f}"
                f"/${self.ceiling.prices.output:.2f} per million input/output tokens (the run stops calling the model"
                " there; --max-cost to change it)"
            )
        elif self.model.startswith("bedrock_converse:") and self.replay is None:
            line += "; cost unknown (set PRICE_PER_MTOK_INPUT and PRICE_PER_MTOK_OUTPUT to bound it)"
        return line

    def begin(self, scenario: str) -> None:
        if self.gateway is None:
            return
        self.gateway.exchanges.clear()
        if self.replay is not None:
            self.backend = ReplayBackend(self.cassettes[scenario])
            self.gateway.backend = self.backend

    def end(self, scenario: str) -> list[str]:
        """The scenario's model calls kept (recording), or what its replay departed on."""
        if self.gateway is None:
            return []
        if self.record is not None:
            Cassette.from_exchanges(scenario, self.model, self.region, self.gateway.exchanges).save(self.record)
        if self.backend is not None:
            return self.backend.problems()
        return []

    @property
    def spent_usd(self) -> float | None:
        return round(self.ceiling.spent_usd, 4) if self.ceiling else None

    @property
    def exhausted(self) -> bool:
        return bool(self.ceiling and self.ceiling.refused)

    def close(self) -> None:
        if self.gateway is not None:
            self.gateway.close()
        self.route.close()
