"""What chaos reads of a scenario file: its faults (the kinds' models, :data:`chaos.kinds.Fault`) and the function
they apply to; the rest of the format (expectations, lifecycle) is the lab's (``incident_responder.lab.scenario``),
which reads the file the same way and reports a broken one with the same :class:`ScenarioError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chaos.kinds import Fault

DEFAULT_FUNCTION = "data-processor"


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names the file and the field."""


def read_mapping(path: Path) -> dict[str, Any]:
    """The scenario file's YAML mapping; ScenarioError for a file that cannot be read or is no mapping."""
    try:
        data = yaml.safe_load(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: expected a mapping with name, faults, workload, expect")
    return data


def invalid(path: Path, exc: ValidationError) -> ScenarioError:
    """A ScenarioError naming each field the model refused."""
    problems = "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}" for err in exc.errors()
    )
    return ScenarioError(f"{path}: {problems}")


class _Workload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    function: str = Field(default=DEFAULT_FUNCTION, pattern=r"^[A-Za-z0-9_-]{1,64}$")


class ScenarioFaults(BaseModel):
    """A scenario's faults, in order, and the function they apply to."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    faults: list[Fault] = Field(default_factory=list)
    workload: _Workload = Field(default_factory=_Workload)


def load_faults(path: str | Path) -> ScenarioFaults:
    path = Path(path)
    data = read_mapping(path)
    try:
        return ScenarioFaults.model_validate(data)
    except ValidationError as exc:
        raise invalid(path, exc) from exc
