"""GetMetricData points as the account readers see them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from incident_responder.account.readings import _metric_data


class _CloudWatch:
    def __init__(self, page: dict[str, Any]) -> None:
        self.page = page

    def get_metric_data(self, **_: Any) -> dict[str, Any]:
        return self.page


class _Clients:
    def __init__(self, page: dict[str, Any]) -> None:
        self.cloudwatch = _CloudWatch(page)

    def get(self, service: str) -> _CloudWatch:
        assert service == "cloudwatch"
        return self.cloudwatch


def test_a_point_whose_time_cannot_be_read_is_left_out_and_the_rest_come_oldest_first():
    later, earlier = datetime(2024, 5, 1, 12, 5, tzinfo=UTC), datetime(2024, 5, 1, 12, 0)
    page = {
        "MetricDataResults": [
            {"Id": "m0", "Timestamps": [later, "not a time", earlier], "Values": [3.0, 2.0, 1.0]},
        ]
    }
    start, end = datetime(2024, 5, 1, tzinfo=UTC), datetime(2024, 5, 2, tzinfo=UTC)

    data = _metric_data(_Clients(page), [{"Id": "m0"}], start, end)  # type: ignore[arg-type]  # a stub client

    assert data == {"m0": [(earlier.replace(tzinfo=UTC), 1.0), (later, 3.0)]}
