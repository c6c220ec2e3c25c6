"""snapstart_not_ready: the published SnapStart version a function's event source mapping invokes is Inactive, its
snapshot deleted (catalogue entry snapstart-not-ready). Lab only: when Lambda deletes a snapshot is AWS's side.

The account part is what a team using SnapStart has: SnapStart on for published versions, a version published with
it, the event source mapping invoking that version. The lab's Lambda then holds the version Inactive.
"""

from __future__ import annotations

from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.lambda_service import hold, require_lab
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType

# The runtimes Lambda SnapStart supports (snapstart.html): Java 11 and later, Python 3.12 and later, .NET 8 and later.
SNAPSTART_RUNTIMES = ("java", "python3.12", "python3.13", "python3.14", "dotnet8", "dotnet9", "dotnet10")
SNAPSTART_REFUSAL = (
    "SnapStart needs a Java, Python or .NET runtime that supports it and a caller that invokes a published version: "
    "only queue-consumer's event source mapping can invoke one"
)


def invoke_snapstart_version(target: FaultTarget, slot: str) -> str:
    """Turn SnapStart on for published versions, publish a version and have the function's SQS mapping invoke it
    (the originals in ``slot`` first); the version published."""
    config = target.config()
    runtime = str(config.get("Runtime") or "")
    if not runtime.startswith(SNAPSTART_RUNTIMES):
        raise ChaosError(f"{target.function_name} runs {runtime or 'a container image'}: {SNAPSTART_REFUSAL}")
    mapping = next((m for m in target.mappings() if ":sqs:" in m.get("EventSourceArn", "")), None)
    if mapping is None:
        raise ChaosError(f"{target.function_name} has no event source mapping: {SNAPSTART_REFUSAL}")
    require_lab(target)  # what the kind then holds is AWS's side: refuse before changing the account
    lam = target.lambda_client
    invoked = mapping["FunctionArn"].split(":function:", 1)[-1].partition(":")[2]
    if invoked and slot in target.store.slots:
        return invoked  # injected already: the mapping invokes the SnapStart version
    apply_on = (config.get("SnapStart") or {}).get("ApplyOn") or "None"
    target.store.remember(slot, {"apply_on": apply_on, "uuid": mapping["UUID"], "invoked": mapping["FunctionArn"]})
    target.update_config(SnapStart={"ApplyOn": "PublishedVersions"})
    version = str(lam.publish_version(FunctionName=target.function_name)["Version"])
    lam.update_event_source_mapping(UUID=mapping["UUID"], FunctionName=f"{target.function_name}:{version}")
    target.wait_mapping(mapping["UUID"])
    return version


def restore_snapstart_version(target: FaultTarget, original: dict[str, Any]) -> str:
    """Release what the lab's Lambda holds on the version, point the mapping back, delete the version, SnapStart as
    it was."""
    lam = target.lambda_client
    invoked = lam.get_event_source_mapping(UUID=original["uuid"])["FunctionArn"]
    version = invoked.split(":function:", 1)[-1].partition(":")[2]
    if version and invoked != original["invoked"]:
        hold(target, None, version)
        lam.update_event_source_mapping(UUID=original["uuid"], FunctionName=original["invoked"])
        target.wait_mapping(original["uuid"])
        lam.delete_function(FunctionName=target.function_name, Qualifier=version)
    target.update_config(SnapStart={"ApplyOn": original["apply_on"]})
    return version


class SnapStartNotReady(KindParameters):
    """The SnapStart version the mapping invokes is Inactive and stays so."""

    kind: Literal["snapstart_not_ready"]


class SnapStartNotReadyKind(ChaosKind[SnapStartNotReady]):
    """A SnapStart version the function's mapping invokes, held Inactive by the lab's Lambda."""

    parameters = SnapStartNotReady
    fault_type = FaultType.FUNCTION_NOT_READY
    workloads = frozenset({QUEUE_CONSUMER})
    refusal = SNAPSTART_REFUSAL
    slots = ("snapstart_not_ready",)
    help = "have the mapping invoke a SnapStart version Lambda holds Inactive, its snapshot deleted (lab only)"

    def inject(self, target: FaultTarget, params: SnapStartNotReady) -> list[str]:
        version = invoke_snapstart_version(target, "snapstart_not_ready")
        hold(target, "snapstart_inactive", version)
        target.store.record_fault({"kind": "snapstart_not_ready"})
        return [
            f"SnapStart on for {target.function_name}'s published versions; its mapping invokes version {version}",
            f"Lambda holds version {version} Inactive (its snapshot deleted)",
        ]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        version = restore_snapstart_version(target, original)
        return f"{target.function_name}'s mapping invokes {original['invoked']} again (version {version} deleted)"
