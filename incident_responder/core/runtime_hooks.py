"""Lambda SnapStart runtime hooks: what one snapshot must not hand to every environment restored from it.

With SnapStart (template parameter ``SnapStart``, on by default for the functions the state machine
invokes) Lambda runs a function's init once, when a version is published, snapshots the memory, and
starts every later execution environment of that version from the snapshot. Whatever init left in memory
is then shared by every environment, so after a restore this module drops:

* boto3 clients and sessions (:mod:`incident_responder.core.aws`, and boto3's default session): their
  credentials were resolved before the snapshot, and their connection pools hold sockets that died with it;
* Powertools Parameters' cache and providers: cached SSM values (the MCP bearer key, the model API key)
  are re-read and re-checked against their ``max_age``, through a new client;
* the ``random`` module's state, re-seeded from the OS: otherwise every restored environment draws the
  same "random" numbers (Powertools' log sampling, the X-Ray SDK's sampler, retry jitter);
* the MCP sessions' shared TLS context (:func:`incident_responder.mcp_transport.client.tls_context`), made at first use
  and so normally never in a snapshot: dropped all the same.

Nothing else the project caches at module level depends on the environment it runs in: the compiled
agent graph, validated settings and built pydantic models are the point of the snapshot. Credentials for
MCP request signing (SigV4) are read per request from a session made per agent run; ``uuid4`` and
``secrets`` read the operating system's generator (``os.urandom``), not state this process keeps.

Before the snapshot, :func:`warm` builds what each handler would otherwise build on its first call
(the pydantic models whose build is deferred at import), so restored environments start with it done.

The hooks come from ``snapshot_restore_py``, which Lambda's Python runtimes include; where it is absent
(the lab, tests, a runtime without SnapStart) :func:`register` registers nothing. Hooks registered in a
module the handler never imports are ignored by Lambda: every handler module calls :func:`register`.
"""

from __future__ import annotations

import logging
import random
import sys
from collections.abc import Callable

logger = logging.getLogger(__name__)

_registered = False
_warmers: list[Callable[[], object]] = []


def refresh_after_restore() -> None:
    """Drop what a snapshot shares between restored environments (see the module's docstring)."""
    random.seed()  # from os.urandom, which differs in every restored environment
    aws = sys.modules.get("incident_responder.core.aws")
    if aws is not None:
        aws.forget_shared_clients()
    if "boto3" in sys.modules:  # a process that never loaded boto3 has no default session to drop
        import boto3

        boto3.DEFAULT_SESSION = None  # boto3.client() makes a new session, with fresh credentials
    parameters = sys.modules.get("aws_lambda_powertools.utilities.parameters")
    if parameters is not None:
        parameters.clear_caches()  # cached values and the providers' clients
    mcp_client = sys.modules.get("incident_responder.mcp_transport.client")
    if mcp_client is not None:
        mcp_client.forget_tls_context()  # a TLS context is made anew, never shared by restored environments


def warm_before_snapshot() -> None:
    """Run the handler's warmers, so their work is in the snapshot; a failing one only loses its head start."""
    for warmer in list(_warmers):
        try:
            warmer()
        except Exception:  # noqa: BLE001 - the snapshot is still good, the first call does the work
            logger.warning("pre-snapshot warm-up %s failed", getattr(warmer, "__name__", warmer), exc_info=True)


def register(*warmers: Callable[[], object]) -> bool:
    """Register the hooks with Lambda's runtime (once per process) and add ``warmers`` to what runs before the
    snapshot. False where there is no SnapStart runtime: then nothing runs, the warmers' work waits for a call."""
    global _registered
    try:
        from snapshot_restore_py import register_after_restore, register_before_snapshot
    except ImportError:
        return False
    _warmers.extend(warmers)
    if not _registered:
        register_before_snapshot(warm_before_snapshot)
        register_after_restore(refresh_after_restore)
        _registered = True
    return True
