"""SERVING the lab: its process's long-lived objects kept out of the cyclic garbage collector's sight.

The lab's process holds moto's backends, botocore's service models, the deployed stack and the sample workloads: over
a million objects that live as long as the lab. CPython's collector walks all of them at each full collection, which
the requests of every incident keep triggering: about a third of the lab process's CPU. Once the lab is up (and again
after a redeploy), they are collected once and frozen (``gc.freeze``): later collections walk only what came after.
"""

from __future__ import annotations

import gc


def settle() -> None:
    """What is garbage now collected, what survives frozen (never collected: it lives as long as the lab)."""
    gc.collect()
    gc.freeze()
