"""SERVING the lab's CloudWatch: moto's metric filter, matched as ListMetrics matches in AWS."""

from __future__ import annotations

from typing import Any


def _list_metrics_by_dimension_name() -> None:
    """CloudWatch's ListMetrics takes a dimension filter without a value ("metrics with this dimension, whatever
    its value"); moto matches such a filter against a dimension whose value is None, which none has."""
    from moto.cloudwatch.models import MetricDatumBase

    original = MetricDatumBase.filter
    if getattr(original, "_lab_by_name", False):
        return

    def by_name(self: Any, namespace: Any, name: Any, dimensions: Any, already_present_metrics: Any = None) -> bool:
        named = [d["Name"] for d in dimensions or [] if d.get("Value") is None]
        valued = [d for d in dimensions or [] if d.get("Value") is not None]
        if named and not {n for n in named} <= {d.name for d in self.dimensions}:
            return False
        return original(self, namespace, name, valued, already_present_metrics)

    by_name._lab_by_name = True  # type: ignore[attr-defined]
    MetricDatumBase.filter = by_name
