"""DIAGNOSING (the offline model): the function's VpcConfig moved from the baseline's subnets or security groups."""

from __future__ import annotations

from typing import Any

from incident_responder.agent.offline.findings import _Builder


def _vpc_config_moved(parts: list[str], before: Any, now: Any) -> bool:
    """A subnet or security group left or joined the function's VpcConfig, or it names one that does not exist:
    the VpcConfig itself changed (not the rules of a subnet or group it kept)."""
    if parts[1:] == ["missing"]:
        return True
    return len(parts) == 3 and parts[1] in ("subnets", "security_groups") and (before is None or now is None)


def _vpc_changed(
    b: _Builder, i: int, diff: dict[str, Any], when: str, dated: list[int], ptr: int, drift: list[dict[str, Any]]
) -> None:
    """The function's VpcConfig moved from the baseline's subnets or groups: to ids that no longer exist
    (Lambda cannot set up its network interfaces), or to subnets with no route out (connections time out)."""
    missing = next((d.get("current") for d in drift if d.get("path") == "network.missing" and d.get("current")), None)
    network = b.obs.results.get("get_network_config") or {}
    routeless = network.get("no_route_out") or []
    points: list[int] = []
    if missing:
        j = next(k for k, d in enumerate(drift) if d.get("path") == "network.missing")
        points.append(
            b.point(
                "get_config_drift",
                f"differences[{j}].current[0]",
                missing[0],
                "the VpcConfig names an id EC2 does not know",
            )
        )
        mode, what = "invalid-subnet-or-security-group", f"names {', '.join(map(str, missing))}, which no longer exist"
    elif routeless:
        points.append(
            b.point(
                "get_network_config", "no_route_out[0]", routeless[0], "this subnet's route table leads nowhere out"
            )
        )
        points += b.first_error_points("outbound connections fail", "network")
        for error in b.obs.errors("network"):  # the route's timeouts, not a rule's
            b.explained.add((str(error.error_type), str(error.message)))
        mode, what = "no-route-to-internet", f"moved to subnet {routeless[0]}, which has no route out of the VPC"
    else:
        mode, what = None, "changed from the baseline's subnets and security groups"
    b.fault("vpc_misconfigured", f"the function's VpcConfig {what}{when}", ptr, *points, *dated, mode=mode)
