"""Fault injection: a fault that cannot be applied to this function."""


class ChaosError(RuntimeError):
    """A fault that cannot be applied to this function (said plainly, nothing half-changed)."""
