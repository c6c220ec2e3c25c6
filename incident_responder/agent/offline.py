"""The offline model: a deterministic, rule-based LangChain chat model that needs no endpoint.

It is a real ``BaseChatModel`` (``bind_tools``, tool calls, usage metadata) and reads only what a
hosted model would read: the incident and the tool results in its message history, through the
tools it was bound to. It never sees injected faults except through tools. It investigates as a
careful SRE would: the symptom picks the first tool, what the logs show picks the next, drift
against the baseline is checked before concluding, and configuration outranks log text (a log line
alone cannot make it claim an infrastructure fault that the account's configuration contradicts).
As the resolver it copies the lookups' ready-made restores; as the critic it looks each action's fault
up again and approves only an action the lookup would make itself, rejects one that changes nothing
(already at the baseline), and leaves anything else to a person.

Token usage is estimated (4 characters a token) so budgets behave as they would with a real model.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from incident_responder.agent.graph import (
    DIAGNOSIS_TAG,
    PROPOSAL_TAG,
    parse_untrusted_json,
    untrusted_block_pattern,
)
from incident_responder.contracts import PARAMETERS_FOR_ACTION

_RESULT = re.compile(r'<tool_result tool="(?P<tool>[^"]+)"[^>]*>\n(?P<body>.*)\n</tool_result>', re.S)
_INCIDENT = re.compile(r"<incident>\n(?P<body>.*?)\n</incident>", re.S)
_ALERT_TEXT = re.compile(r'<alert_text trust="untrusted">\n(?P<body>.*?)\n</alert_text>', re.S)
# The Python runtime's unhandled-exception format: "[ERROR] Type: message\nTraceback (most recent call last):"
_EXCEPTION = re.compile(r"^\[ERROR\] (?P<type>[A-Za-z_][\w.]*): (?P<msg>[^\n]*)\nTraceback \(most recent call last\):")
INFRA_EXCEPTIONS = {
    "ClientError",
    "ConnectTimeoutError",
    "EndpointConnectionError",
    "ReadTimeoutError",
    "ConnectionError",
}
_TIMED_OUT = re.compile(r"Task timed out after (?P<seconds>\d+)\.\d\d seconds")
_REPORT = re.compile(r"Memory Size: (?P<size>\d+) MB\tMax Memory Used: (?P<used>\d+) MB")


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


class Observations:
    """What the message history says: the incident and every tool result (or tool error) by tool."""

    def __init__(self, messages: Sequence[BaseMessage]):
        self.incident: dict[str, Any] = {}
        self.results: dict[str, dict[str, Any]] = {}
        self.failed: dict[str, str] = {}
        self.submit_rejections = 0
        for message in messages:
            text = message.content if isinstance(message.content, str) else ""
            if isinstance(message, HumanMessage) and not self.incident and (m := _INCIDENT.search(text)):
                self.incident = json.loads(m.group("body"))
                if quoted := _ALERT_TEXT.search(text):  # the alert's own words: read as data, like logs
                    self.incident.update(json.loads(quoted.group("body").replace("<\\/", "</")))
            elif isinstance(message, ToolMessage):
                if m := _RESULT.search(text):
                    self.results[m.group("tool")] = json.loads(m.group("body").replace("<\\/", "</"))
                elif text.startswith("ERROR:"):
                    if "rejected" in text:
                        self.submit_rejections += 1
                    self.failed[message.name or "?"] = text
        self.called = set(self.results) | set(self.failed)

    def logs(self) -> list[dict[str, Any]]:
        return self.results.get("get_recent_logs", {}).get("events", [])

    def drift(self) -> list[dict[str, Any]] | None:
        """Differences from the baseline, or None when drift is unknown (not called, or no baseline)."""
        drift = self.results.get("get_config_drift")
        if drift is None or drift.get("error"):
            return None
        return drift.get("differences", [])

    def find_log(self, needle: str) -> int | None:
        for i, event in enumerate(self.logs()):
            if needle in event.get("message", ""):
                return i
        return None


# -- investigation policy -------------------------------------------------------------------------
def next_diagnostic_tool(obs: Observations, available: set[str]) -> str | None:
    """The next tool a careful SRE would call, or None when it is time to conclude."""
    metric = obs.incident.get("metric_name")
    plan: list[str] = []
    if metric == "Throttles":
        plan = ["get_lambda_config"]
    elif metric == "IncomingLogEvents":
        plan = ["get_iam_state"]
    else:
        plan = ["get_recent_logs"]
        if "get_recent_logs" in obs.called:
            if obs.find_log("AccessDenied") is not None or not obs.logs():
                plan.append("get_iam_state")
            if obs.find_log("ConnectTimeoutError") is not None:
                plan.append("get_network_config")
            if obs.find_log("Task timed out") is not None or obs.find_log("signal: killed") is not None:
                plan.append("get_lambda_config")
    plan.append("get_config_drift")
    for tool in plan:
        if tool in available and tool not in obs.called:
            return tool
    return None


class _Builder:
    """Accumulates evidence pointers and findings into a Diagnosis payload."""

    def __init__(self, obs: Observations):
        self.obs = obs
        self.evidence: list[dict[str, Any]] = []
        self.faults: dict[str, list[int]] = {}
        self.causes: list[str] = []
        self.gaps: list[str] = []

    def point(self, tool: str, field: str, value: Any, interpretation: str) -> int:
        for i, existing in enumerate(self.evidence):
            if (existing["tool"], existing["field"], existing["value"]) == (tool, field, str(value)):
                return i
        self.evidence.append(
            {"tool": tool, "field": field, "value": str(value), "interpretation": interpretation, "verified": False}
        )
        return len(self.evidence) - 1

    def fault(self, fault_type: str, cause: str, *pointers: int | None) -> None:
        self.faults.setdefault(fault_type, []).extend(p for p in pointers if p is not None)
        if cause not in self.causes:
            self.causes.append(cause)

    def log_point(self, needle: str, interpretation: str) -> int | None:
        index = self.obs.find_log(needle)
        if index is None:
            return None
        return self.point("get_recent_logs", f"events[{index}].message", needle, interpretation)


def _from_drift(b: _Builder, drift: list[dict[str, Any]]) -> None:
    for i, diff in enumerate(drift):
        path, before, now = diff["path"], diff.get("baseline"), diff.get("current")
        ptr = b.point("get_config_drift", f"differences[{i}].path", path, f"{path} differs from the recorded baseline")
        if path.startswith("role."):
            what = path.split(".", 2)[-1]
            denied = b.log_point("AccessDenied", "the function is denied access by its role")
            b.fault(
                "permission_loss",
                f"the execution role's {what} changed from the baseline ({'removed' if now is None else 'modified'})",
                ptr,
                denied,
            )
        elif path == "reserved_concurrency":
            cfg = b.point(
                "get_config_drift",
                f"differences[{i}].current",
                now,
                f"reserved concurrency is {now} (baseline {before})",
            )
            if now is not None and (before is None or now < before):
                b.fault("throttling", f"reserved concurrency was lowered from {before} to {now}", ptr, cfg)
        elif path.startswith("network."):
            blocked = b.log_point("ConnectTimeoutError", "outbound connections time out")
            b.fault("network_block", "the function's network egress path changed from the baseline", ptr, blocked)
        elif path == "timeout":
            cfg = b.point(
                "get_config_drift", f"differences[{i}].current", now, f"timeout is {now} s (baseline {before} s)"
            )
            if now is not None and before is not None and now < before:
                timed = b.log_point("Task timed out", "invocations hit the timeout")
                b.fault("timeout", f"the function timeout was lowered from {before} s to {now} s", ptr, cfg, timed)
        elif path == "memory_size":
            cfg = b.point(
                "get_config_drift", f"differences[{i}].current", now, f"memory is {now} MB (baseline {before} MB)"
            )
            if now is not None and before is not None and now < before:
                killed = b.log_point("signal: killed", "the runtime was killed for exceeding its memory")
                b.fault("memory_exhaustion", f"memory was lowered from {before} MB to {now} MB", ptr, cfg, killed)


def _from_observation_only(b: _Builder) -> None:
    """No baseline to compare with: conclude only what configuration and logs both support."""
    obs = b.obs
    b.gaps.append(
        "configuration drift unknown (no baseline or drift tool unavailable): findings rest on current state and logs"
    )
    config = obs.results.get("get_lambda_config", {})
    if config.get("ReservedConcurrentExecutions") == 0:
        ptr = b.point(
            "get_lambda_config", "ReservedConcurrentExecutions", 0, "reserved concurrency 0 throttles every invocation"
        )
        b.fault("throttling", "reserved concurrency is 0", ptr)
    denied = b.log_point("AccessDenied", "the function is denied access by its role")
    if denied is not None:
        b.fault("permission_loss", "the execution role denies an action the function needs", denied)
    blocked = b.log_point("ConnectTimeoutError", "outbound connections time out")
    if blocked is not None:
        b.fault("network_block", "outbound connections from the function time out", blocked)
    for i, event in enumerate(obs.logs()):
        if (m := _TIMED_OUT.search(event["message"])) and str(config.get("Timeout")) == m.group("seconds"):
            ptr = b.point(
                "get_recent_logs", f"events[{i}].message", m.group(0), "invocations hit the configured timeout"
            )
            cfg = b.point("get_lambda_config", "Timeout", config["Timeout"], "the configured timeout")
            b.fault("timeout", f"invocations run longer than the {config['Timeout']} s timeout", ptr, cfg)
            break
    for i, event in enumerate(obs.logs()):
        if (
            (m := _REPORT.search(event["message"]))
            and m.group("size") == m.group("used")
            and obs.find_log("signal: killed") is not None
        ):
            ptr = b.point("get_recent_logs", f"events[{i}].message", m.group(0), "memory used reached the memory size")
            b.fault(
                "memory_exhaustion",
                f"invocations exhaust the {m.group('size')} MB memory size",
                ptr,
                b.log_point("signal: killed", "the runtime was killed"),
            )
            break
    if obs.incident.get("metric_name") == "IncomingLogEvents" and "get_iam_state" in obs.results:
        iam = obs.results["get_iam_state"]
        grants_logs = any("logs:" in json.dumps(doc) for doc in iam.get("inline_policies", {}).values())
        if not grants_logs and not iam.get("attached_policy_arns"):
            ptr = b.point(
                "get_iam_state",
                "role_name",
                iam.get("role_name"),
                "this role has no policy granting CloudWatch Logs actions",
            )
            b.fault("permission_loss", "the execution role cannot write logs", ptr)


def _application_errors(b: _Builder) -> None:
    for i, event in enumerate(b.obs.logs()):
        m = _EXCEPTION.match(event.get("message", ""))
        if m and m.group("type") not in INFRA_EXCEPTIONS:
            excerpt = f"{m.group('type')}: {m.group('msg')}"[:120]
            ptr = b.point(
                "get_recent_logs", f"events[{i}].message", excerpt, "an unhandled exception in the function's own code"
            )
            b.fault("application_error", f"the function's code raises {excerpt}", ptr)
            return


REMEDIATION = {
    "permission_loss": ("restore the execution role's policies from the baseline", "low"),
    "throttling": ("restore the function's reserved concurrency from the baseline", "low"),
    "network_block": ("restore the security group egress and NACL entries from the baseline", "medium"),
    "timeout": ("restore the function timeout from the baseline", "low"),
    "memory_exhaustion": ("restore the function memory size from the baseline", "low"),
    "application_error": (
        "fix the function's code (no automated action): a person must change and deploy it",
        "medium",
    ),
}


def build_diagnosis(obs: Observations) -> dict[str, Any]:
    b = _Builder(obs)
    drift = obs.drift()
    if drift is None:
        _from_observation_only(b)
    else:
        _from_drift(b, drift)
    _application_errors(b)
    for tool, error in obs.failed.items():
        if not tool.startswith("submit_"):
            b.gaps.append(f"{tool} could not be used: {error[:200]}")
    function = obs.incident.get("function_name", "the function")
    if not b.faults:
        reason = obs.incident.get("reason") or obs.incident.get("error_message") or "the alert"
        b.fault("unknown", f"no configuration change or recognizable error explains {reason[:200]}")
        b.gaps.append("no tool output explained the alert")
    resources = [obs.results.get("get_lambda_config", {}).get("FunctionArn") or function]
    if "permission_loss" in b.faults and obs.results.get("get_iam_state", {}).get("role_arn"):
        resources.append(obs.results["get_iam_state"]["role_arn"])
    order = list(REMEDIATION) + ["unknown"]
    b.faults = dict(sorted(b.faults.items(), key=lambda item: order.index(item[0])))
    plan = []
    for fault, pointers in b.faults.items():
        if fault in REMEDIATION:
            action, risk = REMEDIATION[fault]
            plan.append(
                {
                    "action": action,
                    "details": f"addresses {fault}",
                    "evidence_basis": sorted(set(pointers)),
                    "risk_level": risk,
                    "requires_approval": True,
                }
            )
    drift_backed = drift is not None and all(b.faults[f] for f in b.faults if f not in ("application_error", "unknown"))
    confidence = "low" if "unknown" in b.faults else ("high" if drift_backed else "medium")
    infra = [f for f in b.faults if f not in ("application_error", "unknown")]
    severity = "critical" if len(infra) > 1 or "throttling" in infra else ("medium" if not infra else "high")
    return {
        "root_cause": f"{function}: " + "; ".join(b.causes) + ".",
        "fault_types": list(b.faults),
        "affected_resources": resources,
        "severity": severity,
        "confidence": confidence,
        "evidence": b.evidence,
        "remediation_plan": plan,
        "investigation_gaps": b.gaps,
    }


# -- remediation policy ---------------------------------------------------------------------------
LOOKUP_FOR_FAULT = {
    "permission_loss": "get_iam_restore_info",
    "throttling": "get_concurrency_restore_info",
    "network_block": "get_network_restore_info",
    "timeout": "get_function_config_restore_info",
    "memory_exhaustion": "get_function_config_restore_info",
}


def _quoted_block(messages: Sequence[BaseMessage], tag: str) -> dict[str, Any]:
    """The data a user turn quotes inside ``<tag>`` (the agents' own tags, from one place)."""
    pattern = untrusted_block_pattern(tag)
    for message in messages:
        if (
            isinstance(message, HumanMessage)
            and isinstance(message.content, str)
            and (m := pattern.search(message.content))
        ):
            return parse_untrusted_json(m.group("body"))
    return {}


def next_remediation_tool(obs: Observations, diagnosis: dict[str, Any], available: set[str]) -> str | None:
    for fault in diagnosis.get("fault_types", []):
        tool = LOOKUP_FOR_FAULT.get(fault)
        if tool and tool in available and tool not in obs.called:
            return tool
    return None


def build_proposal(obs: Observations, diagnosis: dict[str, Any]) -> dict[str, Any]:
    """The submission: the lookups' ready-made actions for the diagnosed faults, as a model copies them."""
    faults = diagnosis.get("fault_types", [])
    unresolvable = [f for f in faults if f not in LOOKUP_FOR_FAULT]
    actions: list[dict[str, Any]] = []
    for tool in dict.fromkeys(LOOKUP_FOR_FAULT[f] for f in faults if f in LOOKUP_FOR_FAULT):
        result = obs.results.get(tool, {})
        actions += [a for a in result.get("actions", []) if a.get("fault_type") in faults and not result.get("error")]
    covered = {a["fault_type"] for a in actions}
    notes = []
    for fault in faults:
        if fault in LOOKUP_FOR_FAULT and fault not in covered:
            unresolvable.append(fault)
            notes.append(f"no restore parameters found for {fault}")
    return {
        "actions": actions,
        "confidence": "high" if actions and not notes else ("low" if not actions else "medium"),
        "chain_of_thought": "; ".join([a["reasoning"] for a in actions] + notes) or "nothing to restore automatically",
        "unresolvable_faults": unresolvable,
    }


# -- review policy ---------------------------------------------------------------------------------
# The parameter that says what an action sets, cited as the evidence for a verdict (in this order).
KEY_PARAMETERS = ("reserved_concurrent_executions", "timeout", "memory_size", "policy_name", "attach_policy_arn")
# Where each lookup shows that nothing drifted for a fault: (field, what it means).
NO_DRIFT = {
    "throttling": ("action", "the reserved concurrency already equals the baseline"),
    "permission_loss": ("drifted", "the role's policies already match the baseline"),
    "network_block": ("drifted", "the egress rules and NACL entries already match the baseline"),
    "timeout": ("current_timeout", "the timeout already equals the baseline"),
    "memory_exhaustion": ("current_memory_size", "the memory size already equals the baseline"),
}


def next_review_tool(obs: Observations, actions: list[dict[str, Any]], available: set[str]) -> str | None:
    return next_remediation_tool(obs, {"fault_types": [a.get("fault_type") for a in actions]}, available)


def _normalized(action: dict[str, Any]) -> dict[str, Any] | None:
    """An action's parameters as the contract dumps them, so equal restores compare equal."""
    try:
        model = PARAMETERS_FOR_ACTION[action["action_type"]]
        return model.model_validate(action.get("parameters") or {}).model_dump(mode="json")
    except (KeyError, ValueError):
        return None


def _key_pointer(index: int, parameters: dict[str, Any]) -> tuple[str, str]:
    for key in KEY_PARAMETERS:
        if key in parameters and (parameters[key] is not None or key == "reserved_concurrent_executions"):
            value = parameters[key]
            return f"actions[{index}].parameters.{key}", "null" if value is None else str(value)
    if parameters.get("security_group_id"):
        return f"actions[{index}].parameters.security_group_id", parameters["security_group_id"]
    entry = (parameters.get("remove_nacl_entries") or [{}])[0]
    return f"actions[{index}].parameters.remove_nacl_entries[0].rule_number", str(entry.get("rule_number"))


def _point(tool: str, field: str, value: Any, interpretation: str) -> dict[str, Any]:
    return {"tool": tool, "field": field, "value": str(value), "interpretation": interpretation}


def judge_action(obs: Observations, action: dict[str, Any]) -> dict[str, Any]:
    """One verdict, as a careful reviewer reaches it from the lookup for the action's fault."""
    order, fault = action.get("execution_order"), action.get("fault_type")
    tool = LOOKUP_FOR_FAULT.get(fault)

    def verdict(kind: str, reason: str, *evidence: dict[str, Any]) -> dict[str, Any]:
        return {"execution_order": order, "verdict": kind, "reasons": [reason], "evidence": list(evidence)}

    if tool is None:
        return verdict("reject", f"{fault} has no automated remedy")
    if tool in obs.failed or tool not in obs.results:
        error = obs.failed.get(tool, "not available").removeprefix("ERROR: ")
        return verdict("needs_human", f"the action cannot be checked: {error[:300]}")
    result = obs.results[tool]
    if result.get("error"):
        return verdict(
            "needs_human",
            f"{tool} reports an error, so the action cannot be checked: {result['error'][:200]}",
            _point(tool, "error", result["error"][:80], "the lookup failed"),
        )
    ready = [(i, a) for i, a in enumerate(result.get("actions") or []) if a.get("fault_type") == fault]
    if not ready and result.get("drifted"):
        return verdict(
            "needs_human",
            f"{tool} shows drift from the baseline but no restore for it",
            _point(tool, "drifted", "true", "the configuration differs from the baseline"),
        )
    if not ready:
        field, meaning = NO_DRIFT[fault]
        value = result.get(field)
        shown = "null" if value is None else json.dumps(value) if isinstance(value, bool) else str(value)
        return verdict("reject", f"no-op: already at the baseline ({meaning})", _point(tool, field, shown, meaning))
    proposed = _normalized(action)
    for index, candidate in ready:
        if candidate.get("action_type") == action.get("action_type") and _normalized(candidate) == proposed:
            field, value = _key_pointer(index, proposed)
            return verdict(
                "approve",
                f"restores exactly what {tool} computes from the baseline ({field} = {value})",
                _point(tool, field, value, "the lookup's own restore for this fault sets this value"),
            )
    index, candidate = ready[0]
    field, value = _key_pointer(index, _normalized(candidate) or {})
    return verdict(
        "needs_human",
        f"the parameters differ from the restore {tool} computes from the baseline ({field} = {value})",
        _point(tool, field, value, "what the lookup would restore instead"),
    )


def build_review(obs: Observations, actions: list[dict[str, Any]]) -> dict[str, Any]:
    verdicts = [judge_action(obs, a) for a in actions]
    counts = {kind: sum(v["verdict"] == kind for v in verdicts) for kind in ("approve", "needs_human", "reject")}
    return {
        "verdicts": verdicts,
        "summary": ", ".join(f"{n} {kind}" for kind, n in counts.items() if n) or "nothing to review",
    }


class OfflineChatModel(BaseChatModel):
    """Deterministic tool-calling chat model; see the module docstring.

    >>> model = OfflineChatModel().bind_tools([])   # bind the discovered tools, as any chat model
    """

    @property
    def _llm_type(self) -> str:
        return "incident-responder-offline"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any):
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        tools: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        available = {t["function"]["name"] for t in tools or []}
        obs = Observations(messages)
        terminal = next((name for name in sorted(available) if name.startswith("submit_")), None)
        call: dict[str, Any] | None = None
        function = obs.incident.get("function_name")
        if terminal == "submit_diagnosis":
            tool = next_diagnostic_tool(obs, available - {terminal}) if function else None
            if tool is not None:
                call = {"name": tool, "args": {"lambda_name": function}}
            else:
                call = {"name": terminal, "args": build_diagnosis(obs)}
        elif terminal == "submit_proposal":
            diagnosis = _quoted_block(messages, DIAGNOSIS_TAG)
            tool = next_remediation_tool(obs, diagnosis, available - {terminal}) if function else None
            if tool is not None:
                call = {"name": tool, "args": {"lambda_name": function}}
            else:
                call = {"name": terminal, "args": build_proposal(obs, diagnosis)}
        elif terminal == "submit_review":
            actions = _quoted_block(messages, PROPOSAL_TAG).get("actions", [])
            tool = next_review_tool(obs, actions, available - {terminal}) if function else None
            if tool is not None:
                call = {"name": tool, "args": {"lambda_name": function}}
            else:
                call = {"name": terminal, "args": build_review(obs, actions)}
        if call is None:
            message = AIMessage(content="I have no tool that fits this request.")
        else:
            call["id"] = (
                f"call_{uuid.uuid5(uuid.NAMESPACE_OID, json.dumps(call, sort_keys=True) + str(len(messages))).hex[:16]}"
            )
            call["type"] = "tool_call"
            message = AIMessage(content="", tool_calls=[call])
        prompt_chars = sum(
            len(m.content) if isinstance(m.content, str) else len(json.dumps(m.content)) for m in messages
        )
        prompt_chars += len(json.dumps(tools or []))
        output = _estimate_tokens(json.dumps(message.tool_calls) + str(message.content))
        prompt = _estimate_tokens("x" * prompt_chars)
        message.usage_metadata = {"input_tokens": prompt, "output_tokens": output, "total_tokens": prompt + output}
        return ChatResult(generations=[ChatGeneration(message=message)])
