"""The hypothesis settings of the property tests that run against the lab."""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def lab_property(examples: int) -> settings:
    """``examples`` drawn the same way on every run: CI never flakes on a newly found one unnoticed. No deadline
    (the lab's calls take what the machine gives them) and no example database (nothing kept between runs)."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    )
