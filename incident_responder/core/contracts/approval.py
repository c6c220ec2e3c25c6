"""AWAITING_APPROVAL: who decided on a set of actions, and the digest of exactly those actions."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from incident_responder.core.contracts.actions import RemediationAction
from incident_responder.core.contracts.base import Contract

ApprovalChannel = Literal["auto", "link", "cli"]


class ApprovalDecision(Contract):
    """Who decided on a set of actions, when, through what, and exactly which actions (their digest).

    The output of the approval task (SendTaskSuccess) and of an automatic approval alike.
    """

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "reject"]
    decided_by: str = Field(min_length=1, max_length=512)
    decided_at: str
    channel: ApprovalChannel
    actions_digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    reason: str | None = Field(default=None, max_length=1000)


def actions_digest(actions: list[RemediationAction] | list[dict]) -> str:
    """The digest a person approves: what each action does (order, type, target, parameters), never its prose.

    >>> actions_digest([]) == actions_digest([])
    True
    """
    import hashlib
    import json

    shown = []
    for action in actions:
        data = action.model_dump(mode="json") if isinstance(action, BaseModel) else action
        shown.append(
            {
                "execution_order": data["execution_order"],
                "fault_type": str(data["fault_type"]),
                "action_type": str(data["action_type"]),
                "target_resource": data["target_resource"],
                "parameters": data["parameters"],
            }
        )
    shown.sort(key=lambda a: a["execution_order"])
    canonical = json.dumps(shown, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
