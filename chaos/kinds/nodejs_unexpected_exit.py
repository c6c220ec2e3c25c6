"""nodejs_unexpected_exit: a new version whose async handler awaits a promise that never settles, published and made
live through the alias its callers use (catalogue entry nodejs-unexpected-exit)."""

from __future__ import annotations

from typing import Any, Literal

from chaos.code import code_sha256, one_file_package
from chaos.errors import ChaosError
from chaos.kinds.bad_deploy import BadDeployKind, _alias
from chaos.kinds.base import ORDERS_API, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


def unsettled_source(function: str) -> str:
    """An async handler that wraps a callback API in a promise and forgets to settle it: the executor never calls
    resolve or reject, so once nothing else is pending Node.js's event loop empties with the handler unfinished."""
    return (
        f"export const {function} = async (event) => {{\n"
        '  const order = typeof event.body === "string" ? JSON.parse(event.body) : event;\n'
        "  // The new audit step: its callback was meant to resolve the promise, and is never registered.\n"
        "  const audited = await new Promise((resolve) => {});\n"
        "  return { statusCode: 201, body: JSON.stringify({ orderId: order.orderId, audited }) };\n"
        "};\n"
    )


class NodejsUnexpectedExit(KindParameters):
    """A new version whose async handler awaits a promise it never settles, live through the function's alias."""

    kind: Literal["nodejs_unexpected_exit"]


class NodejsUnexpectedExitKind(ChaosKind[NodejsUnexpectedExit]):
    """Deploy an async handler that never settles its promise, publish it and point the alias at it. Restore moves
    only the alias back, as bad_deploy's does (the slot is the same)."""

    parameters = NodejsUnexpectedExit
    fault_type = FaultType.DEPLOYMENT_REGRESSION
    # The Node.js workload, invoked through an alias; the Python ones have no such exit.
    workloads = frozenset({ORDERS_API})
    refusal = "does not run Node.js behind an alias"
    slots = ("alias",)
    help = "publish a version whose async handler never settles its promise (Runtime.NodeJsExit) and make it live"

    def inject(self, target: FaultTarget, params: NodejsUnexpectedExit) -> list[str]:
        lam = target.lambda_client
        config = target.config()
        runtime = str(config.get("Runtime", ""))
        if not runtime.startswith("nodejs"):
            runs = runtime or "no managed runtime"
            raise ChaosError(
                f"{target.function_name} does not run Node.js behind an alias (it runs {runs}): the exit error is the "
                "Node.js runtime client's (runtime_exited ends a Python runtime)"
            )
        module, _, function = str(config.get("Handler", "")).rpartition(".")
        if not module or not function:
            raise ChaosError(f"{target.function_name}: handler {config.get('Handler')!r} names no module and method")
        alias = _alias(target)
        name, current = alias["Name"], alias["FunctionVersion"]
        package = one_file_package(f"{module}.mjs", unsettled_source(function))
        sha = code_sha256(package)
        current_sha = lam.get_function_configuration(FunctionName=target.function_name, Qualifier=current)["CodeSha256"]
        target.store.remember(f"alias.{name}", {"function_version": current})
        target.store.record_fault({"kind": "nodejs_unexpected_exit"})
        if current_sha == sha:
            return [f"alias {name} already routes to version {current}, whose handler never settles its promise"]
        lam.update_function_code(FunctionName=target.function_name, ZipFile=package)
        target.wait_updated()
        version = lam.publish_version(FunctionName=target.function_name, CodeSha256=sha)["Version"]
        lam.update_alias(FunctionName=target.function_name, Name=name, FunctionVersion=version)
        return [
            f"published version {version}, whose async {config['Handler']} awaits a promise it never settles",
            f"alias {name}: version {current} -> {version}",
        ]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        return BadDeployKind().restore(target, slot, original)
