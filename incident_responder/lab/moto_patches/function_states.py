"""SERVING the lab's Lambda: a function's state as Lambda reports it, and what only AWS's side of Lambda knows.

moto reports every function ``Active`` and every update ``Successful``, and has no ``StateReason`` or
``StateReasonCode``. Lambda sets them itself (functions-states.html): ``Pending`` while it creates or restores the
function's resources (its network interfaces), ``Inactive`` when it reclaimed them or failed to recreate them, with
the reason code. Here the lab's Lambda records them (:func:`set_function_state`, where moto serves the lab: this
process) and GetFunctionConfiguration answers them.

What makes Lambda's own work hang or fail (its creation of the interfaces stuck, EC2 throttling the calls it makes
with the function's role) is AWS's side, with no API in an account: the lab's chaos kinds hold it through the lab's
own route (``/moto-api/lab/lambda-service``, beside moto's /moto-api/), never in anything a tool reads.
"""

from __future__ import annotations

import json
from typing import Any

# The fields Lambda reports of a function's state, and what moto answers for them (the routine values).
STATE_FIELDS = (
    "State",
    "StateReason",
    "StateReasonCode",
    "LastUpdateStatus",
    "LastUpdateStatusReason",
    "LastUpdateStatusReasonCode",
)
ROUTINE = {"State": "Active", "LastUpdateStatus": "Successful"}

# What the lab's chaos kinds can hold on AWS's side of Lambda, and the state Lambda reports at once for it (the
# others show at the next invocation, when Lambda sets up the function's network interfaces).
CREATION_STUCK = "creation_stuck"  # Lambda's creation of the function's resources does not end
VPC_CONNECTION_RECLAIMED = "vpc_connection_reclaimed"  # Lambda reclaimed the idle function's interfaces
EC2_THROTTLED = "ec2_throttled"  # EC2 throttles the calls Lambda makes with the function's role
# Held on a published version that restores from a SnapStart snapshot (snapstart-troubleshooting.html):
SNAPSTART_INACTIVE = "snapstart_inactive"  # Lambda deleted the version's snapshot (not invoked for 14 days)
SNAPSTART_RESTORE_TIMEOUT = "snapstart_restore_timeout"  # the Restore phase does not end within its limit
CONDITIONS = {
    CREATION_STUCK: {
        "State": "Pending",
        "StateReason": "The function is being created.",
        "StateReasonCode": "Creating",
    },
    VPC_CONNECTION_RECLAIMED: {"State": "Inactive", "StateReasonCode": "Idle"},
    EC2_THROTTLED: {},
    SNAPSTART_INACTIVE: {"State": "Inactive"},
    SNAPSTART_RESTORE_TIMEOUT: {},
}
ROUTE = "/moto-api/lab/lambda-service"


def _functions(function_name: str) -> list[Any]:
    """moto's function objects of that name ($LATEST, or ``name:version``: that published version), in every
    account and Region this process serves."""
    from moto.awslambda.models import lambda_backends
    from moto.awslambda_simple.models import lambda_simple_backends

    name, _, qualifier = function_name.partition(":")
    found = []
    for regions in [*lambda_backends.values(), *lambda_simple_backends.values()]:
        for backend in regions.values():
            try:
                found.append(backend.get_function(name, qualifier or None))
            except Exception:  # noqa: BLE001 (moto's not-found errors differ by call)
                continue
    return found


def set_function_state(function_name: str, **fields: str | None) -> bool:
    """Lambda sets the function's state (the fields given; None or a routine value: back to moto's). False: no such
    function where moto serves the lab."""
    functions = _functions(function_name)
    for fn in functions:
        state = dict(fn.__dict__.get("lab_state") or {})
        state.update(fields)
        fn.lab_state = {k: v for k, v in state.items() if v is not None and ROUTINE.get(k) != v}
        if "State" in fields and fields["State"] in (None, "Active"):  # a reason belongs to the state it explains
            for key in ("StateReason", "StateReasonCode"):
                if key not in fields:
                    fn.lab_state.pop(key, None)
    return bool(functions)


def condition_of(function_name: str) -> str | None:
    """What AWS's side holds for the function (one of CONDITIONS), else None."""
    return next((fn.__dict__.get("lab_condition") for fn in _functions(function_name)), None)


def hold(function_name: str, condition: str | None) -> bool:
    """Hold ``condition`` on AWS's side for the function (None: release it, and the function is Active again)."""
    if condition is not None and condition not in CONDITIONS:
        raise ValueError(f"unknown condition {condition!r}")
    functions = _functions(function_name)
    for fn in functions:
        fn.lab_condition = condition
    if condition is None:
        set_function_state(function_name, **dict.fromkeys(STATE_FIELDS))
    else:
        set_function_state(function_name, **CONDITIONS[condition])
    return bool(functions)


def report_function_states() -> None:
    """GetFunctionConfiguration (and every answer carrying a configuration) reports the state the lab's Lambda set."""
    from moto.awslambda.models import LambdaFunction

    if getattr(LambdaFunction.get_configuration, "_reports_states", False):
        return
    original = LambdaFunction.get_configuration

    def get_configuration(self: Any, *args: Any, **kwargs: Any) -> Any:
        config = original(self, *args, **kwargs)
        config.update(self.__dict__.get("lab_state") or {})
        return config

    get_configuration._reports_states = True  # type: ignore[attr-defined]
    get_configuration.__dict__.update({k: v for k, v in original.__dict__.items() if k.startswith("_")})
    LambdaFunction.get_configuration = get_configuration  # type: ignore[method-assign]


def report_snap_start() -> None:
    """moto reports SnapStart off whatever the function asks: keep ``SnapStart.ApplyOn`` (CreateFunction,
    UpdateFunctionConfiguration) and report it as Lambda does (API_SnapStartResponse): ``OptimizationStatus`` is
    ``On`` for a published version created while ApplyOn was ``PublishedVersions`` (the version keeps its own),
    ``Off`` for $LATEST, which never restores from a snapshot."""
    from moto.awslambda.models import LambdaFunction

    if getattr(LambdaFunction.get_configuration, "_reports_snap_start", False):
        return
    init, update, get = LambdaFunction.__init__, LambdaFunction.update_configuration, LambdaFunction.get_configuration

    def __init__(self: Any, account_id: str, spec: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        init(self, account_id, spec, *args, **kwargs)
        self.lab_snap_start = (spec.get("SnapStart") or {}).get("ApplyOn") or "None"

    def update_configuration(self: Any, config_updates: dict[str, Any]) -> Any:
        apply_on = (config_updates.get("SnapStart") or {}).get("ApplyOn") or "None"
        if "SnapStart" in config_updates and apply_on != self.__dict__.get("lab_snap_start", "None"):
            self.lab_snap_start = apply_on
            self.code_or_config_updated = True  # a version published next takes the new setting
        return update(self, config_updates)

    def get_configuration(self: Any, *args: Any, **kwargs: Any) -> Any:
        config = get(self, *args, **kwargs)
        apply_on = self.__dict__.get("lab_snap_start") or "None"
        published = str(self.version) != "$LATEST"
        status = "On" if published and apply_on == "PublishedVersions" else "Off"
        config["SnapStart"] = {"ApplyOn": apply_on, "OptimizationStatus": status}
        return config

    get_configuration._reports_snap_start = True  # type: ignore[attr-defined]
    get_configuration.__dict__.update({k: v for k, v in get.__dict__.items() if k.startswith("_")})
    update_configuration.__dict__.update(update.__dict__)
    LambdaFunction.__init__ = __init__  # type: ignore[method-assign]
    LambdaFunction.update_configuration = update_configuration  # type: ignore[method-assign]
    LambdaFunction.get_configuration = get_configuration  # type: ignore[method-assign]


def answer_lab_route() -> None:
    """The lab's route for AWS's side of Lambda: POST ``{"function_name": ..., "condition": ... | null}``."""
    from moto.moto_api._internal import urls

    pattern = "{0}" + ROUTE + "$"
    if pattern in urls.url_paths:
        return

    def lambda_service(request: Any, full_url: str, headers: Any) -> tuple[int, dict[str, str], str]:
        if request.method != "POST":
            return 405, {}, json.dumps({"error": "POST a function_name and a condition"})
        body = json.loads(request.data or b"{}")
        try:
            found = hold(str(body.get("function_name") or ""), body.get("condition"))
        except ValueError as exc:
            return 400, {}, json.dumps({"error": str(exc)})
        if not found:
            return 404, {}, json.dumps({"error": "no such function"})
        return 200, {"Content-Type": "application/json"}, json.dumps({"held": body.get("condition")})

    urls.url_paths[pattern] = lambda_service
