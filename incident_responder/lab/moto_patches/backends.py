"""SERVING the lab: moto's server, finding each request's service without listing its package every time."""

from __future__ import annotations


def _list_services_once() -> None:
    """moto's server finds a request's service by listing its own package directory (a stat per service,
    some 150) on every request: a fifth of a simple call's time. The list cannot change while the lab runs."""
    from moto import backends

    if getattr(backends.list_of_moto_modules, "_lab_cached", False):
        return
    services = tuple(backends.list_of_moto_modules())

    def listed() -> tuple[str, ...]:
        return services

    listed._lab_cached = True  # type: ignore[attr-defined]
    backends.list_of_moto_modules = listed
