"""response_not_serializable: code whose handler returns bytes (base64 output left undecoded) is deployed to the
function (catalogue entry response-not-serializable)."""

from __future__ import annotations

import base64
from typing import Any, Literal

from chaos.code import deployed_package, one_file_package
from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


def bytes_returning_source(function: str) -> str:
    return (
        "import base64\nimport json\n\n\n"
        f"def {function}(event, context):\n"
        "    # The caller wants the batch base64-encoded; b64encode returns bytes, which are not JSON.\n"
        "    return base64.b64encode(json.dumps(event).encode())\n"
    )


class ResponseNotSerializable(KindParameters):
    """The function's code replaced at $LATEST by a handler that returns base64 output undecoded."""

    kind: Literal["response_not_serializable"]


class ResponseNotSerializableKind(ChaosKind[ResponseNotSerializable]):
    """Deploy a handler whose return value the runtime cannot serialise (Runtime.MarshalError)."""

    parameters = ResponseNotSerializable
    fault_type = FaultType.APPLICATION_ERROR
    # The Python workloads invoked at $LATEST; behind an alias, new code is a new version (bad_deploy).
    workloads = frozenset({DATA_PROCESSOR, QUEUE_CONSUMER})
    refusal = "is invoked through an alias"
    slots = ("code",)
    help = "deploy a handler that returns bytes, which the runtime cannot serialise (Runtime.MarshalError)"

    def inject(self, target: FaultTarget, params: ResponseNotSerializable) -> list[str]:
        target.refuse_if_aliased(": new code reaches its callers only as a new version (use bad_deploy)")
        config = target.config()
        if not str(config.get("Runtime", "")).startswith("python"):
            raise ChaosError(f"{target.function_name} does not run Python")
        module, _, function = config["Handler"].rpartition(".")
        original = deployed_package(target.clients, target.function_name)
        target.store.remember("code", base64.b64encode(original).decode())
        package = one_file_package(module.replace(".", "/") + ".py", bytes_returning_source(function))
        target.lambda_client.update_function_code(FunctionName=target.function_name, ZipFile=package)
        target.wait_updated()
        target.store.record_fault({"kind": "response_not_serializable"})
        return [f"deployed code whose {config['Handler']} returns bytes (base64 output left undecoded)"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        target.lambda_client.update_function_code(FunctionName=target.function_name, ZipFile=base64.b64decode(original))
        target.wait_updated()
        return "the function's code put back"
