"""runtime_exited: code whose handler ends the runtime's process with an explicit exit is deployed to the function
(catalogue entry runtime-exited)."""

from __future__ import annotations

import base64
from typing import Any, Literal

from pydantic import Field

from chaos.code import deployed_package, one_file_package
from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


def exiting_source(function: str, status: int) -> str:
    return (
        "import sys\n\n\n"
        f"def {function}(event, context):\n"
        "    if not event:\n"
        "        return {'processed': 0}\n"
        "    # A script's way out, not a handler's: the runtime's process ends with the invocation unanswered.\n"
        f"    sys.exit({status})\n"
    )


class RuntimeExited(KindParameters):
    """The function's code replaced at $LATEST by a handler that calls ``sys.exit(status)``."""

    kind: Literal["runtime_exited"]
    status: int = Field(default=1, ge=1, le=255, description="the exit status the code passes")


class RuntimeExitedKind(ChaosKind[RuntimeExited]):
    """Deploy a handler that exits the runtime's process (Runtime.ExitError)."""

    parameters = RuntimeExited
    fault_type = FaultType.APPLICATION_ERROR
    # The Python workloads invoked at $LATEST; behind an alias, new code is a new version (bad_deploy).
    workloads = frozenset({DATA_PROCESSOR, QUEUE_CONSUMER})
    refusal = "is invoked through an alias"
    slots = ("code",)
    help = "deploy a handler that calls sys.exit, ending the runtime's process (Runtime.ExitError)"
    defaults = {"status": 1}
    argument_help = {"status": "the exit status (default: 1)"}
    example = {"status": 2}

    def inject(self, target: FaultTarget, params: RuntimeExited) -> list[str]:
        target.refuse_if_aliased(": new code reaches its callers only as a new version (use bad_deploy)")
        config = target.config()
        if not str(config.get("Runtime", "")).startswith("python"):
            raise ChaosError(f"{target.function_name} does not run Python")
        module, _, function = config["Handler"].rpartition(".")
        original = deployed_package(target.clients, target.function_name)
        target.store.remember("code", base64.b64encode(original).decode())
        package = one_file_package(module.replace(".", "/") + ".py", exiting_source(function, params.status))
        target.lambda_client.update_function_code(FunctionName=target.function_name, ZipFile=package)
        target.wait_updated()
        target.store.record_fault({"kind": "runtime_exited", "status": params.status})
        return [f"deployed code whose {config['Handler']} calls sys.exit({params.status})"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        target.lambda_client.update_function_code(FunctionName=target.function_name, ZipFile=base64.b64decode(original))
        target.wait_updated()
        return "the function's code put back"
