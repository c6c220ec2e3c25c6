"""Reading the message history: what the offline model knows, and nothing more than a hosted model would.

The incident (its facts and the alert's own words), every tool result or tool error by tool, and the
data the first user turn quotes (the diagnosis, the proposal), all read back through the tags
:mod:`incident_responder.agent.protocol` writes them with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from incident_responder.account.log_records import classify_error_type
from incident_responder.account.log_window import LogErrorSummary, summarize
from incident_responder.agent.protocol import (
    ALERT_TEXT_TAG,
    DIAGNOSIS_TAG,
    INCIDENT_TAG,
    PROPOSAL_TAG,
    RUNBOOK_TAG,
    TERMINAL_TOOL_PREFIX,
    TOOL_RESULT_TAG,
    read_blocks,
)
from incident_responder.core.contracts.incident import QUEUE_METRICS

# SQS metrics that say a queue is not being drained.


@dataclass(frozen=True)
class SeenError:
    """One kind of error the logs report, and where it sits in the get_recent_logs result."""

    summary: dict[str, Any]  # a LogErrorSummary as the tool returned it (or as read from the events here)
    index: int | None  # its index in the result's ``errors``; None when read from the events by the model

    def __getattr__(self, name: str) -> Any:
        if name in self.summary:
            return self.summary[name]
        field = LogErrorSummary.model_fields.get(name)
        if field is None or field.is_required():
            raise AttributeError(name)
        return field.get_default(call_default_factory=True)  # the tool leaves unset fields out


class Observations:
    """What the message history says: the incident and every tool result (or tool error) by tool."""

    def __init__(self, messages: Sequence[BaseMessage]):
        self.incident: dict[str, Any] = {}
        self.results: dict[str, dict[str, Any]] = {}
        self.failed: dict[str, str] = {}
        self.quoted: dict[str, Any] = {}
        self.submit_rejections = 0
        for message in messages:
            text = message.content if isinstance(message.content, str) else ""
            if isinstance(message, HumanMessage):
                self._read_user_turn(text)
            elif isinstance(message, ToolMessage):
                # The loop marks errors by status; the text may quote anything (a tool's error, a log line).
                if message.status == "error":
                    if (message.name or "").startswith(TERMINAL_TOOL_PREFIX):
                        self.submit_rejections += 1
                    self.failed[message.name or "?"] = text
                elif (
                    (results := read_blocks(text, TOOL_RESULT_TAG))
                    and results[0][0].get("tool")
                    and isinstance(results[0][1], dict)
                ):
                    self.results[results[0][0]["tool"]] = results[0][1]
        self.called = set(self.results) | set(self.failed)

    def _read_user_turn(self, text: str) -> None:
        if not self.incident and (incident := read_blocks(text, INCIDENT_TAG)) and isinstance(incident[0][1], dict):
            self.incident = dict(incident[0][1])
            alert = read_blocks(text, ALERT_TEXT_TAG)
            if alert and isinstance(alert[0][1], dict):  # the alert's own words: read as data, like logs
                self.incident.update(alert[0][1])
        for tag in (DIAGNOSIS_TAG, PROPOSAL_TAG, RUNBOOK_TAG):
            if tag not in self.quoted and (blocks := read_blocks(text, tag)):
                self.quoted[tag] = blocks[0][1]

    # -- the incident ------------------------------------------------------------------------------
    @property
    def function_name(self) -> str | None:
        return self.incident.get("function_name")

    def alert_error_category(self) -> str | None:
        """What the alert's error type means, when it is an AWS or platform error (the text is untrusted)."""
        classified = classify_error_type(self.incident.get("error_type"))
        return classified[1] if classified else None

    def alert_mode(self) -> str | None:
        """The failure catalogue entry whose error the alert names: by the words of its message first (they tell
        more than a code several failures share, such as AccessDeniedException), else by its error type (the text
        is untrusted)."""
        from incident_responder.catalogue.queries import failure_mode_of

        message = self.incident.get("error_message")
        return failure_mode_of(None, message) or failure_mode_of(self.incident.get("error_type"), message)

    def alert_mode_area(self) -> str | None:
        """The failure catalogue area of the entry whose error the alert names (the text is untrusted)."""
        from incident_responder.catalogue.queries import MODES_BY_ID

        mode = MODES_BY_ID.get(self.alert_mode() or "")
        return mode.area if mode is not None else None

    def is_queue_alarm(self) -> bool:
        """The alarm watches a queue (its messages age): ingest found the function through its event source."""
        return self.incident.get("namespace") == "AWS/SQS" or self.incident.get("metric_name") in QUEUE_METRICS

    # -- logs ----------------------------------------------------------------------------------------
    def logs_read(self) -> bool:
        logs = self.results.get("get_recent_logs")
        return logs is not None and not logs.get("error")

    def logs(self) -> list[dict[str, Any]]:
        return self.results.get("get_recent_logs", {}).get("events", [])

    def invocations(self) -> dict[str, Any]:
        """What the platform's START and REPORT lines said (the tool summarizes them instead of listing them)."""
        return self.results.get("get_recent_logs", {}).get("invocations") or {}

    def log_errors(self) -> list[SeenError]:
        """The errors the logs report: the tool's own summary, or (from an older server) read here."""
        result = self.results.get("get_recent_logs", {})
        if isinstance(result.get("errors"), list):
            return [SeenError(e, i) for i, e in enumerate(result["errors"]) if isinstance(e, dict)]
        summaries, _ = summarize([str(e.get("message", "")) for e in self.logs()])
        return [SeenError(s.model_dump(mode="json"), None) for s in summaries]

    def errors(self, *categories: str, origin: str | None = None) -> list[SeenError]:
        return [
            e
            for e in self.log_errors()
            if (not categories or e.category in categories) and (origin is None or e.origin == origin)
        ]

    # -- configuration -------------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        config = self.results.get("get_lambda_config", {})
        return {} if config.get("error") else config

    def drift(self) -> list[dict[str, Any]] | None:
        """Differences from the baseline, or None when drift is unknown (not called, or no baseline)."""
        drift = self.results.get("get_config_drift")
        if drift is None or drift.get("error"):
            return None
        return drift.get("differences", [])
