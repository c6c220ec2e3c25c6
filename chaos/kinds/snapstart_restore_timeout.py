"""snapstart_restore_timeout: the Restore phase of the published SnapStart version a function's event source mapping
invokes does not end within its limit (catalogue entry snapstart-restore-timeout). Lab only: the lab's runtimes take
no snapshot and run no after-restore hook, so the lab's Lambda holds the Restore phase timing out.

The account part is snapstart_not_ready's: SnapStart on for published versions, a version published with it, the
event source mapping invoking that version.
"""

from __future__ import annotations

from typing import Any, Literal

from chaos.kinds.base import QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.kinds.snapstart_not_ready import SNAPSTART_REFUSAL, invoke_snapstart_version, restore_snapstart_version
from chaos.lambda_service import hold
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


class SnapStartRestoreTimeout(KindParameters):
    """Restoring the SnapStart version the mapping invokes times out, every time."""

    kind: Literal["snapstart_restore_timeout"]


class SnapStartRestoreTimeoutKind(ChaosKind[SnapStartRestoreTimeout]):
    """A SnapStart version the function's mapping invokes, whose Restore phase the lab's Lambda holds timing out."""

    parameters = SnapStartRestoreTimeout
    fault_type = FaultType.SNAPSTART_FAILURE
    workloads = frozenset({QUEUE_CONSUMER})
    refusal = SNAPSTART_REFUSAL
    slots = ("snapstart_restore_timeout",)
    help = "have the mapping invoke a SnapStart version whose Restore phase times out (lab only)"

    def inject(self, target: FaultTarget, params: SnapStartRestoreTimeout) -> list[str]:
        version = invoke_snapstart_version(target, "snapstart_restore_timeout")
        hold(target, "snapstart_restore_timeout", version)
        target.store.record_fault({"kind": "snapstart_restore_timeout"})
        return [
            f"SnapStart on for {target.function_name}'s published versions; its mapping invokes version {version}",
            f"the Restore phase of version {version} times out",
        ]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        version = restore_snapstart_version(target, original)
        return f"{target.function_name}'s mapping invokes {original['invoked']} again (version {version} deleted)"
