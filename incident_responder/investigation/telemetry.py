"""INVESTIGATING: the log lines and the EMF metrics an investigation's result leaves behind.

Written through the handler's Powertools ``Logger`` and ``Metrics`` (namespace ``IncidentResponder``): log
``agent_metrics`` (calls, tokens, budget left, tool output bytes, latency) and ``agent_reasoning_summary``
(outcome, end reason, tools called, the diagnosis's fault types, root cause and severity, grounded ratio);
metadata ``outcome``, metrics ``LlmCalls``, ``ToolCalls``, ``TotalTokens``, ``GroundedRatio`` and
``InvestigationLatency``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

if TYPE_CHECKING:  # types only
    from incident_responder.core.contracts import Diagnosis
    from incident_responder.investigation.investigate import InvestigationResult


def record_investigation(
    logger: Logger, metrics: Metrics, result: InvestigationResult, diagnosis: Diagnosis | None
) -> None:
    """What an investigation did and concluded: its log lines and metrics."""
    m = result.metrics
    logger.info(
        "agent_metrics",
        extra={
            "agent_metrics": {
                "llm_calls": m.llm_calls,
                "tool_calls": m.tool_calls,
                "prompt_tokens": m.input_tokens,
                "completion_tokens": m.output_tokens,
                "total_tokens": m.total_tokens,
                "token_budget_left": m.token_budget_left,
                "tool_output_bytes": m.tool_output_bytes,
                "latency_ms": m.latency_ms,
            }
        },
    )
    logger.info(
        "agent_reasoning_summary",
        extra={
            "agent_reasoning_summary": {
                "outcome": result.outcome,
                "end_reason": result.end_reason,
                "tools_called": result.tools_called,
                "fault_types": [f.value for f in diagnosis.fault_types] if diagnosis else [],
                "root_cause": diagnosis.root_cause if diagnosis else None,
                "severity": diagnosis.severity if diagnosis else None,
                "grounded_ratio": m.grounded_ratio,
                "steps": m.llm_calls,
            }
        },
    )
    metrics.add_metadata(key="outcome", value=result.outcome)
    metrics.add_metric(name="LlmCalls", unit=MetricUnit.Count, value=m.llm_calls)
    metrics.add_metric(name="ToolCalls", unit=MetricUnit.Count, value=m.tool_calls)
    metrics.add_metric(name="TotalTokens", unit=MetricUnit.Count, value=m.total_tokens)
    metrics.add_metric(name="GroundedRatio", unit=MetricUnit.Percent, value=m.grounded_ratio * 100)
    metrics.add_metric(name="InvestigationLatency", unit=MetricUnit.Milliseconds, value=m.latency_ms)
