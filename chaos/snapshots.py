"""Where chaos keeps the original values it must put back.

A JSON file per (endpoint, account, region, function) under a state directory (default
``$XDG_STATE_HOME/incident-responder/chaos``, else ``~/.local/state/...``; override with
``RESPONDER_CHAOS_STATE_DIR`` or ``--state-dir``). Keeping it outside the target account means chaos
needs no resources of its own there; keying it by endpoint keeps separate labs apart.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

MISSING = {"__absent__": True}  # JSON-safe marker: "this did not exist before the fault"


def default_state_dir() -> Path:
    if os.environ.get("RESPONDER_CHAOS_STATE_DIR"):
        return Path(os.environ["RESPONDER_CHAOS_STATE_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "incident-responder" / "chaos"


def forget_endpoint(state_dir: Path, endpoint: str) -> list[Path]:
    """Drop every record kept for ``endpoint`` (a fresh lab there is a new, empty account)."""
    dropped = []
    for path in state_dir.glob("*.json") if state_dir.is_dir() else []:
        try:
            target = json.loads(path.read_text()).get("target", {})
        except (OSError, ValueError, AttributeError):
            continue  # not ours to judge
        if target.get("endpoint") == endpoint:
            path.unlink(missing_ok=True)
            dropped.append(path)
    return dropped


class SnapshotStore:
    """Original values by slot name, in the order they were first touched."""

    def __init__(self, path: Path, target: dict[str, str]):
        self.path = path
        self.target = target
        data = json.loads(path.read_text()) if path.exists() else {}
        self.slots: dict[str, Any] = data.get("slots", {})
        self.faults: list[dict[str, Any]] = data.get("faults", [])

    @classmethod
    def for_target(cls, state_dir: Path, endpoint: str, account: str, region: str, function: str) -> SnapshotStore:
        digest = hashlib.sha256(f"{endpoint}|{account}|{region}".encode()).hexdigest()[:12]
        target = {"endpoint": endpoint, "account": account, "region": region, "function": function}
        return cls(state_dir / f"{function}-{region}-{digest}.json", target)

    def remember(self, slot: str, original: Any) -> None:
        """Record ``original`` for ``slot`` unless an earlier fault already did (first touch wins)."""
        if slot not in self.slots:
            self.slots[slot] = MISSING if original is None else original
            self.save()

    def record_fault(self, fault: dict[str, Any]) -> None:
        if fault not in self.faults:
            self.faults.append(fault)
            self.save()

    def original(self, slot: str) -> Any:
        value = self.slots[slot]
        return None if value == MISSING else value

    def forget(self, slot: str) -> None:
        self.slots.pop(slot, None)
        if not self.slots:
            self.faults.clear()
        self.save()

    def save(self) -> None:
        if not self.slots and not self.faults:
            self.path.unlink(missing_ok=True)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"target": self.target, "faults": self.faults, "slots": self.slots}, indent=2))
        tmp.replace(self.path)  # atomic: an interrupted write never loses the originals
