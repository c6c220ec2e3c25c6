"""SERVING the lab: the error of a moto the lab's patches were not verified against."""

from __future__ import annotations


class UntestedMotoError(RuntimeError):
    """The installed moto is not the version the lab's patches of its internals were verified against."""
