"""Fault injection, lab only: what only AWS's side of Lambda knows (its creation of a function's network interfaces
stuck, their reclaiming, EC2 throttling the calls it makes with the function's role, a published version's SnapStart
snapshot deleted or its restore timing out), held through the lab's own
route beside moto's /moto-api/. An account in AWS has no such API: there the kinds that need it refuse."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from chaos.errors import ChaosError
from chaos.target import FaultTarget

ROUTE = "/moto-api/lab/lambda-service"  # the lab's (incident_responder/lab/moto_patches/function_states.py)


def hold(target: FaultTarget, condition: str | None, version: str | None = None) -> None:
    """Have the lab's Lambda hold ``condition`` for the function, or that published version of it (None: release
    it)."""
    endpoint = target.clients.endpoint_url.rstrip("/")
    name = f"{target.function_name}:{version}" if version else target.function_name
    body = json.dumps({"function_name": name, "condition": condition}).encode()
    request = urllib.request.Request(
        endpoint + ROUTE, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (the lab's own endpoint)
            response.read()
    except (urllib.error.URLError, OSError) as exc:
        raise ChaosError(
            f"{endpoint} does not answer the lab's route for AWS's side of Lambda ({exc}): only the lab can hold it, "
            "so this kind runs against the lab"
        ) from exc


def require_lab(target: FaultTarget) -> None:
    """Refuse before any change unless the endpoint answers the lab's route (it answers a GET with 405)."""
    endpoint = target.clients.endpoint_url.rstrip("/")
    try:
        with urllib.request.urlopen(endpoint + ROUTE, timeout=10):  # noqa: S310 (the lab's own endpoint)
            pass
    except urllib.error.HTTPError as exc:
        if exc.code == 405:
            return
        raise ChaosError(f"{endpoint} does not answer the lab's route for AWS's side of Lambda ({exc})") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise ChaosError(f"{endpoint} does not answer the lab's route for AWS's side of Lambda ({exc})") from exc
    raise ChaosError(f"{endpoint} does not answer the lab's route for AWS's side of Lambda")
