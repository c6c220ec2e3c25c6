"""The model's side of the lab: cassettes: one scenario's model calls, recorded, and replayed by matching each request
to a recorded one (by the agent making it and by its shape, never by cache points or by text a run changes on its own).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from incident_responder.lab.converse.errors import CassetteError, ConverseError
from incident_responder.lab.scenario import ScenarioError, ScenarioName, path_of

FORMAT = 1


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
class RecordedError(BaseModel):
    status: int
    type: str
    message: str


class RecordedExchange(BaseModel):
    """One recorded call: what a replay matches it on, and the answer or the error it got."""

    model_config = ConfigDict(extra="allow")
    agent: str
    agent_key: str
    model_id: str
    shape: list[str]
    request: dict[str, Any] = {}
    response: dict[str, Any] | None = None
    error: RecordedError | None = None

    @model_validator(mode="after")
    def _answered(self) -> RecordedExchange:
        if not (self.response or self.error):
            raise ValueError("an exchange without a response or an error")
        return self


class CassetteFile(BaseModel):
    """A cassette as saved: read whole before any lab starts, so a broken one is a reason, never a crash mid-run."""

    format: Literal[1]
    scenario: ScenarioName
    model: str
    region: str
    recorded_at: str = ""
    exchanges: list[RecordedExchange]


def _problems(exc: ValidationError) -> str:
    """What is wrong with a cassette: each field and why (the first five)."""
    said = []
    for error in exc.errors(include_input=False)[:5]:
        where = ".".join(map(str, error["loc"]))
        said.append(f"missing {where}" if error["type"] == "missing" else f"{where}: {error['msg']}")
    return "; ".join(said)[:600]


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
        path = cassette_path(directory, self.scenario)
        directory.mkdir(parents=True, exist_ok=True)
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
        except RecursionError:
            raise CassetteError(f"{path}: not a cassette (nested too deeply)") from None
        # JSONDecodeError and UnicodeDecodeError are ValueErrors, and so is an integer too long to convert.
        except (OSError, ValueError) as exc:
            raise CassetteError(f"{path}: not a cassette ({str(exc)[:300]})") from None
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            raise CassetteError(f"{path}: not a cassette of format {FORMAT}")
        try:
            read = CassetteFile.model_validate(body)
        except ValidationError as exc:
            raise CassetteError(f"{path}: not a cassette ({_problems(exc)})") from None
        exchanges = [row.model_dump() for row in read.exchanges]
        return cls(read.scenario, read.model, read.region, exchanges, read.recorded_at)


def cassette_path(directory: Path, scenario: str) -> Path:
    """Where the scenario's cassette is in ``directory``: never outside it, whatever the scenario is named."""
    try:
        return path_of(directory, scenario, ".json")
    except ScenarioError as exc:
        raise CassetteError(str(exc)) from None


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
