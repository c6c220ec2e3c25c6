"""Every stage: the base of every contract, its validator built on first use; all of them built before a snapshot."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Contract(BaseModel):
    """The base of every contract. Validators are built on first use (``defer_build``), not at import:
    each Lambda function builds only the contracts it reads (ingest reads the incident, not the proposal).
    :func:`build_all` builds them all at once, before a SnapStart snapshot."""

    model_config = ConfigDict(defer_build=True)


def build_all() -> None:
    """Build every contract's validator and serializer now (see :class:`Contract`)."""
    pending = list(Contract.__subclasses__())
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        model.model_rebuild()
