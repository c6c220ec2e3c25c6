"""Every lifecycle state: the keys of the ``incident-state`` table, one table holding eight kinds of item.

The table has one key, ``incident_id`` (a string, no sort key), and a TTL attribute, ``expires_at`` (epoch
seconds). Besides the incidents themselves it holds the items that keep the lifecycle safe, each kind under a
key of its own shape: a prefix and ``#``-separated parts. An incident id never holds a ``#`` (it is an
execution name, ``[A-Za-z0-9_-]``), so no other item's key can be taken for an incident's.

===============  ============================================  ==============================================
item             key                                           written by / read by; when it expires
===============  ============================================  ==============================================
incident         ``<incident_id>``                             the state machine (RECEIVED, then every status);
                                                               read by ``responder show|pending|approve``,
                                                               reconcile and the sweep, ingest (has it ended?).
                                                               ``IncidentTtlDays`` after it started. The only
                                                               kind with a ``status`` attribute: the sweep scans
                                                               that attribute for incidents.
account budget   ``rate#<hour>``                               the state machine ("Account budget"): incidents
                                                               started in that clock hour (UTC, ``<hour>`` is the
                                                               execution's StartTime to the hour,
                                                               ``2026-11-25T01``). A day after its first count.
function budget  ``rate#<function_name>#<hour>``               the state machine ("Function budget"): the same,
                                                               per function. A day after its first count.
alert group      ``group#<function_name>#<digest>``            ingest (:mod:`incident_responder.intake.ingest`):
                                                               alerts of one fault (``<digest>``: 16 hex of the
                                                               SHA-256 of the fault signature) within the
                                                               grouping window, claimed conditionally so one
                                                               copy starts the execution. A day past the window.
approval record  ``approval#<incident_id>``                    the approval request (:mod:`incident_responder.
                                                               approval.request`): the actions shown, the hashed
                                                               token; claimed once by a decision (approval page,
                                                               ``responder approve``), scanned by ``responder
                                                               pending``. ``IncidentTtlDays`` after it expires.
ledger head      ``remediation#<incident_id>``                 remediate (:mod:`incident_responder.remediation.
                                                               ledger`): the digest and the steps' orders, so
                                                               a rollback finds them without a scan.
                                                               ``IncidentTtlDays`` after it is written.
ledger step      ``remediation#<incident_id>#<order>``         remediate: one action's prior state (to undo
                                                               it) and what it left; read by the rollback and
                                                               ``responder report``. As the head.
resource lease   ``lease#<resource>`` (``role:NAME``,          remediate takes it before its first write
                 ``function:NAME``, ``key:ARN``...)            (:mod:`incident_responder.remediation.lease`),
                                                               with a fencing token (``fence``); it gives it
                                                               back after verifying, after rolling back, and
                                                               reconcile after an execution ended otherwise:
                                                               one incident at a time per resource. A day
                                                               past the lease.
history          ``history#<function_name>``                   the report step, as an incident ends
                                                               (:mod:`incident_responder.memory`): the function's
                                                               last ended incidents, newest first; read by the
                                                               ``get_incident_history`` tool and the review's
                                                               memory rules. ``MemoryTtlDays`` after its last
                                                               write.
===============  ============================================  ==============================================

The stored values are what deployed tables hold: a shape here changes only with a migration of those items.
The state machine builds the ``rate#`` keys itself (JSONata in ``statemachine/
incident_lifecycle.asl.json``); tests/unit/test_state_keys.py checks that it builds the same keys as this module.
"""

from __future__ import annotations

import hashlib

SEPARATOR = "#"
RATE_PREFIX = "rate#"
GROUP_PREFIX = "group#"
APPROVAL_PREFIX = "approval#"
LEDGER_PREFIX = "remediation#"
LEASE_PREFIX = "lease#"
HISTORY_PREFIX = "history#"


def is_incident(key: str) -> bool:
    """Is this the key of an incident (not of a budget, group, approval, ledger or lease item)?"""
    return SEPARATOR not in key


def rate(hour: str, function_name: str | None = None) -> str:
    """The budget counter of a clock hour (``2026-11-25T01``): the account's, or one function's."""
    return f"{RATE_PREFIX}{function_name}{SEPARATOR}{hour}" if function_name else f"{RATE_PREFIX}{hour}"


def group(function_name: str, signature: str) -> str:
    """The alert group of one fault (its signature, e.g. ``metric:AWS/Lambda:Errors``) of one function."""
    digest = hashlib.sha256(signature.encode()).hexdigest()[:16]
    return f"{GROUP_PREFIX}{function_name}{SEPARATOR}{digest}"


def approval(incident_id: str) -> str:
    """The approval record of an incident."""
    return f"{APPROVAL_PREFIX}{incident_id}"


def incident_of_approval(key: str) -> str:
    """The incident an approval record's key names."""
    return key.removeprefix(APPROVAL_PREFIX)


def ledger_head(incident_id: str) -> str:
    """The head of an incident's undo ledger: which steps it has."""
    return f"{LEDGER_PREFIX}{incident_id}"


def ledger_step(incident_id: str, execution_order: int) -> str:
    """One step of an incident's undo ledger, by its action's execution order."""
    return f"{LEDGER_PREFIX}{incident_id}{SEPARATOR}{execution_order}"


def lease(resource: str) -> str:
    """The lease that lets one incident at a time change a resource (``role:NAME``, ``function:NAME``...)."""
    return f"{LEASE_PREFIX}{resource}"


def history(function_name: str) -> str:
    """A function's memory: its last ended incidents."""
    return f"{HISTORY_PREFIX}{function_name}"
