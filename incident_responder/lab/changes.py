"""WAITING on the lab: counts of changes in its moto (executions, table writes) that waiters sleep on."""

from __future__ import annotations

import threading


class Changes:
    """Counts of changes in the lab's moto that waiters sleep on, instead of asking moto again and again:
    ``execution`` (an execution's history grew or it ended) and ``table`` (a DynamoDB write, an incident's
    status among them; moto_patches/dynamodb.py bumps it)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._counts: dict[str, int] = {}

    def bump(self, kind: str) -> None:
        with self._changed:
            self._counts[kind] = self._counts.get(kind, 0) + 1
            self._changed.notify_all()

    def seen(self, *kinds: str) -> tuple[int, ...]:
        with self._changed:
            return tuple(self._counts.get(kind, 0) for kind in kinds)

    def wait(self, seen: tuple[int, ...], *kinds: str, timeout: float) -> tuple[int, ...]:
        """The counts of ``kinds`` once one differs from ``seen``, or after ``timeout`` seconds."""
        with self._changed:
            self._changed.wait_for(lambda: self.seen(*kinds) != seen, timeout=max(0.0, timeout))
            return self.seen(*kinds)


LAB_CHANGES = Changes()
# How long a waiter sleeps without news before it looks anyway: moto may run in another process (a lab
# started by `responder lab up`), where no change reaches this one.
UNANNOUNCED_LOOK_SECONDS = 0.5
# How long a waiter lets a burst of changes finish before it looks: a state's transition is several history events
# and table writes in a row, each of which would otherwise cost a look of its own.
COALESCE_SECONDS = 0.05
