"""RECEIVED: the incident, a failing function as the alert described it, and how a handler reads it from its event."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from incident_responder.core.contracts.base import Contract
from incident_responder.core.errors import InvalidIncidentError

# A Lambda qualifier: $LATEST, a version number or an alias name (in ARNs, alarm dimensions and tool arguments).
QUALIFIER_RE = r"\$LATEST|[A-Za-z0-9_-]{1,128}"

# An AWS account id and a Region name (in ARNs, alarms and the deployment's list of member accounts and Regions).
ACCOUNT_RE = r"\d{12}"
REGION_NAME_RE = r"[a-z]{2}(-[a-z]+)+-\d"

INCIDENT_ID_PATTERN = r"^[A-Za-z0-9_-]{1,80}$"  # also a valid Step Functions execution name


# The metrics of an alarm on a queue (AWS/SQS): ingest found the function through its event source mappings.
QUEUE_METRICS = frozenset({"ApproximateAgeOfOldestMessage", "ApproximateNumberOfMessagesVisible"})


class Incident(Contract):
    """A failing function as the alert described it; the input of an investigation."""

    model_config = ConfigDict(extra="forbid")

    incident_id: str = Field(pattern=INCIDENT_ID_PATTERN)
    function_name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    qualifier: str | None = Field(
        default=None,
        pattern=rf"^({QUALIFIER_RE})$",
        description="the alias or version the alarm named (Lambda's Resource or ExecutedVersion dimension)",
    )
    source: Literal["cloudwatch_alarm", "alert"]
    detected_at: str = Field(description="ISO 8601 time the alert fired")
    resolved_from: str | None = Field(
        default=None,
        max_length=500,
        description="how the function was found when the alert did not name it (e.g. a queue's event source mapping)",
    )
    alarm_name: str | None = None
    metric_name: str | None = Field(default=None, description="e.g. Errors, Throttles, IncomingLogEvents")
    namespace: str | None = None
    reason: str | None = Field(default=None, max_length=2000, description="the alarm's NewStateReason")
    error_type: str | None = Field(default=None, max_length=200)
    error_message: str | None = Field(default=None, max_length=2000)
    region: str | None = None
    account_id: str | None = None


# The incident's facts: the fields whose contract admits only a closed grammar (ids, a function name, a
# qualifier, the source), so no value can carry markup or an instruction. Everything else the alert set is
# its text, written by whoever named the alarm, its metric or its children, raised the alert, or by the
# failing code itself (an error message): the agents see it quoted as untrusted data, never as the incident.
# A field added to Incident is alert text until it is listed here.
FACT_FIELDS = ("incident_id", "function_name", "qualifier", "source")
ALERT_TEXT_FIELDS = tuple(name for name in Incident.model_fields if name not in FACT_FIELDS)


def incident_facts(incident: Incident) -> tuple[dict, dict]:
    """(facts, alert text) of an incident, for the agents' first message."""
    data = incident.model_dump(mode="json", exclude_none=True)
    text = {k: data.pop(k) for k in ALERT_TEXT_FIELDS if k in data}
    return data, text


def incident_from_event(event: dict) -> Incident:
    """The incident in a handler's event (``{"incident": {...}}`` or the incident itself)."""
    from pydantic import ValidationError

    try:
        return Incident.model_validate(event.get("incident", event) if isinstance(event, dict) else event)
    except ValidationError as exc:
        raise InvalidIncidentError(f"not an incident: {exc.errors()[:3]}") from exc
