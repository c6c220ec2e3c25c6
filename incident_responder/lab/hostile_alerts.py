"""Alerts an ingest must reject, for the tests and the fault matrix (``scripts/fault_matrix.py``)."""

from __future__ import annotations

import json
import random


def hostile_alerts() -> list[str]:
    """100 alerts that mean nothing: random bytes, deep nesting, huge numbers, unknown functions, bad times.

    Deterministic (seeded); every one must end in the dead-letter queue with a reason, starting nothing.
    """
    rng = random.Random(7)
    good = {"function_name": "data-processor", "detected_at": "2026-11-23T04:00:00Z", "error_type": "E"}
    alerts = [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))).decode("latin-1") for _ in range(25)]
    alerts += ["[" * depth + "]" * depth for depth in (1_000, 10_000, 100_000, 120_000)]
    alerts += ['{"a":' * depth + "1" + "}" * depth for depth in (5_000, 20_000, 40_000)]
    alerts += [json.dumps(good)[:-1] + f', "n": {"9" * digits}}}' for digits in (4_301, 10_000, 200_000)]
    alerts += [json.dumps({**good, "function_name": f"not-onboarded-{i}"}) for i in range(20)]
    alerts += [
        json.dumps({**good, "detected_at": value})
        for value in ("aaaaaaaaaa", "2026-13-45T99:99:99Z", "2999-01-01T00:00:00Z", "1" * 40, "2026-11-23")
    ]
    alerts += [json.dumps({**good, "detected_at": f"{'x' * i}2026"}) for i in range(6, 26)]
    alerts += [json.dumps(v) for v in (None, 1, "s", [], [good], True, 1e308)]
    alerts += [
        json.dumps({"AlarmName": "a" * i, "NewStateValue": "ALARM", "StateChangeTime": "now", "Trigger": {}})
        for i in range(1, 13)
    ]
    alerts += [json.dumps({**good, "function_name": "data-processor\n"})]
    assert len(alerts) == 100
    return alerts
