"""Where an eval's model calls go when they travel over Converse: forwarded to the user's model (and recorded), or
replayed from a recording with no model and no credentials.

    responder eval scenarios --model bedrock_converse:ID --record cassettes/ID   # the real model; one file a scenario
    responder eval scenarios --replay cassettes/ID                               # the same run, offline

The agent functions reach a local :class:`~incident_responder.lab.converse_gateway.ConverseGateway` through
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

import datetime
import hashlib
import json
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from incident_responder.agent.model_catalog import Prices, prices
from incident_responder.lab.converse_gateway import ConverseError, ConverseGateway
from incident_responder.lab.model_route import ModelRoute, resolve_model_route

FORMAT = 1
REPLAY_PROFILE = "responder-replay"
# The model's tool-use system prompt Bedrock adds to every call with tools (a few hundred tokens, not in the request).
HIDDEN_PROMPT_TOKENS = 1_000


class CassetteError(Exception):
    """A recording that cannot be made or replayed: no such folder, a scenario without its cassette, a file that is
    not one, cassettes of different models; said before any lab starts."""


# -- what a request is, for matching ------------------------------------------------------------------------
def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


def agent_of(request: dict[str, Any]) -> tuple[str, str]:
    """(key, label) of the agent making ``request``: its system prompt and tool names; the label is its terminal
    tool (``submit_diagnosis``, ...)."""
    system = "".join(block.get("text", "") for block in request.get("system", []))
    tools = sorted(t["toolSpec"]["name"] for t in request.get("toolConfig", {}).get("tools", []) if "toolSpec" in t)
    key = _digest([system, tools])
    return key, next((name for name in tools if name.startswith("submit_")), key)


def _block(block: dict[str, Any]) -> str:
    if "toolUse" in block:
        use = block["toolUse"]
        return f"toolUse {use['name']} {_digest(use.get('input'))} #{use['toolUseId']}"
    if "toolResult" in block:
        result = block["toolResult"]
        return f"toolResult #{result['toolUseId']} {result.get('status', 'success')}"
    return next(iter(block), "?")  # text, cachePoint, image, ...: its kind, never its words


def shape(request: dict[str, Any]) -> list[str]:
    """The parts of a request a replay must see again: the inference settings, then each message's role and blocks
    (cache points left out: where the cache starts changes the bill, not the answer)."""
    settings = json.dumps(request.get("inferenceConfig", {}), sort_keys=True)
    return [f"inference {settings}"] + [
        f"{m['role']}: {', '.join(_block(b) for b in m.get('content', []) if 'cachePoint' not in b)}"
        for m in request.get("messages", [])
    ]


def _difference(recorded: list[str], sent: list[str]) -> str:
    for index, (was, now) in enumerate(zip(recorded, sent, strict=False)):
        if was != now:
            where = "the inference settings" if index == 0 else f"message {index}"
            return f"{where}: recorded [{was}], this run [{now}]"
    return f"the recorded request had {len(recorded) - 1} message(s), this run's {len(sent) - 1}"


# -- cassettes ----------------------------------------------------------------------------------------------
@dataclass
class Cassette:
    """One scenario's model calls, in the order they were made."""

    scenario: str
    model: str
    region: str
    exchanges: list[dict[str, Any]]
    recorded_at: str = ""

    @classmethod
    def from_exchanges(cls, scenario: str, model: str, region: str, exchanges: Iterable[Any]) -> Cassette:
        rows = []
        for e in exchanges:
            key, label = agent_of(e.request)
            rows.append(
                {
                    "agent": label,
                    "agent_key": key,
                    "model_id": e.model_id,
                    "shape": shape(e.request),
                    "request": e.request,
                    "response": e.response,
                    "error": e.error,
                }
            )
        now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        return cls(scenario, model, region, rows, now)

    def save(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{self.scenario}.json"
        body = {"format": FORMAT, "scenario": self.scenario, "model": self.model, "region": self.region}
        body |= {"recorded_at": self.recorded_at, "exchanges": self.exchanges}
        path.write_text(json.dumps(body, indent=1) + "\n")
        return path

    @classmethod
    def load(cls, path: Path) -> Cassette:
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CassetteError(f"{path}: no cassette for this scenario (record it with --record)") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CassetteError(f"{path}: not a cassette ({exc})") from None
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            raise CassetteError(f"{path}: not a cassette of format {FORMAT}")
        try:
            exchanges = body["exchanges"]
            for row in exchanges:
                if not {"agent_key", "model_id", "shape"} <= set(row) or not (row.get("response") or row.get("error")):
                    raise KeyError("an exchange without agent_key, model_id, shape and a response or an error")
            return cls(body["scenario"], body["model"], body["region"], exchanges, body.get("recorded_at", ""))
        except (KeyError, TypeError) as exc:
            raise CassetteError(f"{path}: not a cassette (missing {exc})") from None


class ReplayBackend:
    """Answers from a cassette: each request matched to the next unused recorded call of the same agent."""

    def __init__(self, cassette: Cassette):
        self.cassette = cassette
        self.used = [False] * len(cassette.exchanges)
        self.departures: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, model_id: str, request: dict[str, Any]) -> dict[str, Any]:
        key, label = agent_of(request)
        sent = shape(request)
        with self._lock:
            index = next(
                (i for i, row in enumerate(self.cassette.exchanges) if not self.used[i] and row["agent_key"] == key),
                None,
            )
            turn = sum(self.used[i] for i, row in enumerate(self.cassette.exchanges) if row["agent_key"] == key) + 1
            if index is None:
                problem = f"{label} call {turn} is not in the cassette (it holds {turn - 1} for this agent)"
            else:
                row = self.cassette.exchanges[index]
                if row["model_id"] != model_id:
                    problem = f"{label} call {turn} asks {model_id}, the cassette recorded {row['model_id']}"
                elif row["shape"] != sent:
                    problem = f"{label} call {turn} differs at {_difference(row['shape'], sent)}"
                else:
                    problem = None
                    self.used[index] = True
            if problem is not None:
                self.departures.append(f"departed from the cassette: {problem}")
                raise ConverseError(400, "ValidationException", f"replay: departed from the cassette: {problem}")
        if row["error"]:
            error = row["error"]
            raise ConverseError(error["status"], error["type"], error["message"])
        return row["response"]

    def problems(self) -> list[str]:
        """What made this replay differ from its recording: departures, then recorded calls never asked for."""
        unused: dict[str, int] = {}
        for row, used in zip(self.cassette.exchanges, self.used, strict=True):
            if not used:
                unused[row["agent"]] = unused.get(row["agent"], 0) + 1
        left = [f"{n} recorded {agent} call(s) never made" for agent, n in unused.items()]
        return self.departures + ([f"departed from the cassette: {', '.join(left)}"] if left else [])


# -- forwarding, under a ceiling ---------------------------------------------------------------------------
@dataclass
class SpendCeiling:
    """A run's most: each call reserves what it could cost at most (every byte of the request a token at the cache-
    write price, plus the hidden tool prompt, plus its ``maxTokens`` of output) and settles at what its usage says."""

    limit_usd: float
    prices: Prices
    spent_usd: float = 0.0
    reserved_usd: float = 0.0
    refused: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def worst(self, request: dict[str, Any]) -> float:
        size = len(json.dumps(request).encode()) + HIDDEN_PROMPT_TOKENS
        output = int(request.get("inferenceConfig", {}).get("maxTokens") or 4096)
        return (size * max(self.prices.input, self.prices.cache_write) + output * self.prices.output) / 1e6

    def reserve(self, request: dict[str, Any]) -> float:
        worst = self.worst(request)
        with self._lock:
            if self.spent_usd + self.reserved_usd + worst > self.limit_usd:
                self.refused += 1
                raise ConverseError(
                    400,
                    "ValidationException",
                    f"the eval's spend ceiling: ${self.spent_usd:.4f} spent, this call could cost ${worst:.4f} more "
                    f"than the ${self.limit_usd:.2f} allowed (responder eval --max-cost)",
                )
            self.reserved_usd += worst
        return worst

    def settle(self, reserved: float, usage: dict[str, Any] | None) -> None:
        usage = usage or {}
        read, write = int(usage.get("cacheReadInputTokens") or 0), int(usage.get("cacheWriteInputTokens") or 0)
        cost = self.prices.cost(
            int(usage.get("inputTokens") or 0) + read + write, int(usage.get("outputTokens") or 0), read, write
        )
        with self._lock:
            self.reserved_usd -= reserved
            self.spent_usd += cost


class ForwardBackend:
    """The user's Bedrock endpoint, called with the user's credentials, once per call (no retries here)."""

    def __init__(
        self,
        endpoint: str,
        region: str,
        credentials: tuple[str, str, str | None],
        ceiling: SpendCeiling | None = None,
    ):
        self.endpoint, self.region, self.credentials = endpoint, region, credentials
        self.ceiling = ceiling
        self._client = None
        self._lock = threading.Lock()

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                import boto3
                from botocore.config import Config

                key, secret, token = self.credentials
                self._client = boto3.client(
                    "bedrock-runtime",
                    region_name=self.region,
                    endpoint_url=self.endpoint,  # explicit: the process's AWS_ENDPOINT_URL is the lab's
                    aws_access_key_id=key,
                    aws_secret_access_key=secret,
                    aws_session_token=token,
                    config=Config(retries={"total_max_attempts": 1}, read_timeout=300, connect_timeout=10),
                )
            return self._client

    def __call__(self, model_id: str, request: dict[str, Any]) -> dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

        reserved = self.ceiling.reserve(request) if self.ceiling else 0.0
        usage = None
        try:
            response = self.client().converse(modelId=model_id, **request)
            response.pop("ResponseMetadata", None)
            usage = response.get("usage")
            return response
        except ClientError as exc:
            error = exc.response.get("Error", {})
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 500
            raise ConverseError(status, error.get("Code", "InternalServerException"), error.get("Message", "")) from exc
        except ParamValidationError as exc:  # what Bedrock would refuse too
            raise ConverseError(400, "ValidationException", str(exc)) from exc
        except BotoCoreError as exc:  # the endpoint unreachable: what the function would have seen, transient
            raise ConverseError(503, "ServiceUnavailableException", f"{type(exc).__name__}: {exc}") from exc
        finally:
            if self.ceiling:
                self.ceiling.settle(reserved, usage)


# -- an eval's model calls ---------------------------------------------------------------------------------
def cost_bound(scenarios: int, found: Prices) -> float:
    """What ``scenarios`` incidents may cost at most: three agents each, each stopping after the turn that reaches
    AgentTokenCap (counted as twice the cap), its output at most AgentRecursionLimit answers of 4,096 tokens."""
    from incident_responder.lab.stack import load_template

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
        self.cassettes = {name: Cassette.load(directory / f"{name}.json") for name in scenarios}
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
