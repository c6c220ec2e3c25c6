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


def _list_response_methods_once() -> None:
    """moto finds an action's method by listing its response class's functions (``inspect.getmembers``) on every
    request, about a tenth of a simple call's time. The lab patches those classes before its server answers, so
    each class's list is made once, on its first request."""
    from moto.core import responses

    if getattr(responses.method_names_from_class, "_lab_cached", False):
        return
    listed: dict[type, list[str]] = {}
    original = responses.method_names_from_class

    def method_names_from_class(clazz: type) -> list[str]:
        names = listed.get(clazz)
        if names is None:
            names = listed[clazz] = original(clazz)
        return names

    method_names_from_class._lab_cached = True  # type: ignore[attr-defined]
    responses.method_names_from_class = method_names_from_class  # type: ignore[assignment]
