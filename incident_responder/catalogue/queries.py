"""The failure catalogue, whole and queried: every entry in the page's order, and what the responder reads of it.

The log reader's tables of error codes (``log_records``) are derived from the signatures here, and
``docs/failure-catalogue.md`` is rendered from the whole list (``scripts/catalogue.py``).
"""

from __future__ import annotations

from collections.abc import Iterable

from incident_responder.catalogue.async_invocation import ASYNC_INVOCATION
from incident_responder.catalogue.concurrency import CONCURRENCY
from incident_responder.catalogue.configuration import CONFIGURATION
from incident_responder.catalogue.deployment import DEPLOYMENT
from incident_responder.catalogue.event_sources import EVENT_SOURCES
from incident_responder.catalogue.failure_mode import FailureMode, SignatureKind
from incident_responder.catalogue.invocation import INVOCATION
from incident_responder.catalogue.kms import KMS
from incident_responder.catalogue.mounts import MOUNTS
from incident_responder.catalogue.networking import NETWORKING

# Every entry, section by section in the page's order (``AREAS``).
FAILURE_MODES: tuple[FailureMode, ...] = (
    *INVOCATION,
    *CONCURRENCY,
    *CONFIGURATION,
    *NETWORKING,
    *KMS,
    *EVENT_SOURCES,
    *ASYNC_INVOCATION,
    *DEPLOYMENT,
    *MOUNTS,
)


def signature_categories(kind: SignatureKind, modes: Iterable[FailureMode] = FAILURE_MODES) -> dict[str, str]:
    """text -> the log reader's category, for every signature of that kind that has one.

    Raises ValueError when two signatures give one text two categories (the tests keep the list free of that).
    """
    found: dict[str, str] = {}
    for mode in modes:
        for signature in mode.signatures:
            if signature.kind != kind or signature.category is None:
                continue
            known = found.setdefault(signature.text, signature.category)
            if known != signature.category:
                raise ValueError(
                    f"{signature.text!r} ({kind}) has two categories: {known!r} and {signature.category!r} ({mode.id})"
                )
    return found


MODES_BY_ID: dict[str, FailureMode] = {mode.id: mode for mode in FAILURE_MODES}


def _unambiguous(kinds: tuple[SignatureKind, ...]) -> dict[str, str]:
    """text -> the one entry that prints it, for the signatures of these kinds no other entry shares."""
    owners: dict[str, set[str]] = {}
    for mode in FAILURE_MODES:
        for signature in mode.signatures:
            if signature.kind in kinds:
                owners.setdefault(signature.text, set()).add(mode.id)
    return {text: next(iter(ids)) for text, ids in owners.items() if len(ids) == 1}


_BY_ERROR_TYPE = _unambiguous(("error_code", "platform_error", "network_error"))
_BY_MESSAGE = _unambiguous(("message",))


def failure_mode_of(error_type: str | None, message: str | None = None) -> str | None:
    """The id of the one entry whose string this error prints (its error type, or a message string), or None
    when no entry, or more than one, prints it."""
    if error_type:
        for name in (error_type, error_type.rsplit(".", 1)[-1]):
            if name in _BY_ERROR_TYPE:
                return _BY_ERROR_TYPE[name]
    if message:
        for text, mode in _BY_MESSAGE.items():
            if text in message:
                return mode
    return None


def modes_by_fault_type() -> dict[str, list[FailureMode]]:
    """The diagnosed modes by the fault type the responder gives them."""
    grouped: dict[str, list[FailureMode]] = {}
    for mode in FAILURE_MODES:
        if mode.fault_type is not None:
            grouped.setdefault(mode.fault_type, []).append(mode)
    return grouped


def counts() -> dict[str, int]:
    """How many modes are listed, and how many the responder fixes, hands over or does not diagnose yet."""
    by_responder = {"fixed": 0, "handed_over": 0, "not_yet": 0}
    for mode in FAILURE_MODES:
        by_responder[mode.responder] += 1
    return {
        "listed": len(FAILURE_MODES),
        **by_responder,
        "diagnosed": by_responder["fixed"] + by_responder["handed_over"],
    }
