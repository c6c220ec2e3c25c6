"""INGEST: the shapes an alert arrives in: CloudWatch's alarm notification (SNS), the project's own alert JSON, and
the SNS event that carries them to the ingest function.

The other shapes of the same alarm change (EventBridge's, an alarm's Lambda action's) are read into the
notification's fields by :mod:`incident_responder.intake.alarm_events`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field


class AlarmDimension(BaseModel):
    # SNS notifications spell them name/value; DescribeAlarms, Name/Value.
    model_config = ConfigDict(populate_by_name=True)
    name: str = Field(validation_alias=AliasChoices("name", "Name"))
    value: str = Field(validation_alias=AliasChoices("value", "Value"))


class AlarmMetric(BaseModel):
    """One metric an alarm reads: the trigger's own, or one of a metric-math or anomaly-detection alarm's."""

    model_config = ConfigDict(extra="allow")
    MetricName: str | None = None
    Namespace: str | None = None
    Dimensions: list[AlarmDimension] = Field(default_factory=list)


class AlarmMetricStat(BaseModel):
    model_config = ConfigDict(extra="allow")
    Metric: AlarmMetric | None = None


class AlarmMetricQuery(BaseModel):
    """An entry of ``Trigger.Metrics``: a metric (``MetricStat``) or an expression over others."""

    model_config = ConfigDict(extra="allow")
    Id: str | None = None
    Expression: str | None = None
    MetricStat: AlarmMetricStat | None = None


class AlarmTrigger(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    MetricName: str | None = None
    Namespace: str | None = None
    Dimensions: list[AlarmDimension] = Field(default_factory=list)
    # Metric math (e.g. Errors / Invocations) and anomaly detection (ANOMALY_DETECTION_BAND around a metric).
    Metrics: list[AlarmMetricQuery] = Field(default_factory=list)

    def metrics(self) -> list[AlarmMetric]:
        """Every metric the alarm reads, the trigger's own first."""
        own = [AlarmMetric(MetricName=self.MetricName, Namespace=self.Namespace, Dimensions=self.Dimensions)]
        queried = [q.MetricStat.Metric for q in self.Metrics if q.MetricStat and q.MetricStat.Metric]
        return [m for m in own if m.Dimensions] + queried


class AlarmNotification(BaseModel):
    """The body CloudWatch publishes to SNS when an alarm changes state (CloudWatch User Guide, "Schema of
    Amazon SNS notifications when alarms change state")."""

    model_config = ConfigDict(extra="allow")
    AlarmName: str
    NewStateValue: str
    NewStateReason: str | None = None
    OldStateValue: str | None = None
    StateChangeTime: str
    AlarmArn: str | None = None
    AWSAccountId: str | None = None
    # A metric alarm has a Trigger; a composite alarm an AlarmRule over other alarms instead, and the children
    # whose change set it off ([{"Arn": ..., "State": {"Value": "ALARM", ...}}], or bare ARNs).
    Trigger: AlarmTrigger | None = None
    AlarmRule: str | None = None
    TriggeringChildren: list[Any] = Field(default_factory=list)


class ProjectAlert(BaseModel):
    """The project's own alert JSON, for sources that are not CloudWatch alarms."""

    model_config = ConfigDict(extra="forbid")
    function_name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    # Required: together with alert_id it identifies the alert, so duplicates map to one incident.
    detected_at: str = Field(min_length=10, max_length=40, description="ISO 8601")
    alert_id: str | None = Field(default=None, max_length=200)
    error_type: str | None = Field(default=None, max_length=200)
    error_message: str | None = Field(default=None, max_length=2000)
    region: str | None = None
    account_id: str | None = None


class SnsMessage(BaseModel):
    MessageId: str
    Message: str


class SnsRecord(BaseModel):
    EventSource: Literal["aws:sns"]
    Sns: SnsMessage


class SnsEvent(BaseModel):
    """What ingest reads of the SNS event Lambda invokes it with: each record's message and id. (Powertools' parser
    would validate every field SNS sends, but loading it builds the models of every event source it knows.)"""

    Records: list[SnsRecord]
