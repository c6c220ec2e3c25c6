"""The lab's incident runs: one scenario's incident, from the injected faults to the lifecycle's end."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from chaos.faults import FaultInjector
from incident_responder.account.baseline import baseline_table_name, load_baseline, record_baseline
from incident_responder.account.drift import diff_configurations
from incident_responder.account.state import configuration_from
from incident_responder.core.aws import AwsClients
from incident_responder.core.members import Member, function_key
from incident_responder.intake.ingest import incident_for_alert
from incident_responder.intake.resolve import incident_from_alert
from incident_responder.lab import approver
from incident_responder.lab.changes import COALESCE_SECONDS, LAB_CHANGES, UNANNOUNCED_LOOK_SECONDS
from incident_responder.lab.emulation.burst import Workload
from incident_responder.lab.pipeline.record import IncidentRecord, earlier_summary
from incident_responder.lab.scenario import Alert, Approver, Scenario, Setup
from incident_responder.lab.workloads.selection import workload_for
from incident_responder.remediation.health import (
    PERIOD,
    HealthProbe,
    HealthReport,
    InvocationSample,
    burst_probe,
    cloudwatch_probe,
    first_whole_minute,
    reporting_lag,
)
from incident_responder.state.lifecycle import get_incident_state, history, incident_id_of

# What the lab's person does with the approval request, for each approver setting.
APPROVER_ACTS = {"auto": "approve", "reject": "reject", "none": "none"}
# Minutes of ordinary traffic a sample function had before its first burst in the lab (its metrics' normal).
HISTORY_MINUTES = 30


def metric_verification_probe(invocations: int = 3) -> HealthProbe:
    """The deployed probe (:func:`~incident_responder.remediation.health.cloudwatch_probe`) on the lab's CloudWatch.

    On AWS the traffic after the change comes on its own and the verify function waits until Lambda has reported a
    whole minute of it. Here a burst of the workload (no alarm sent) is that traffic, started in the first whole
    minute after the change, and CloudWatch is read as of the moment that minute is fully reported: the lab skips
    the waiting, not the metrics. The workload writes its ``AWS/Lambda`` datapoints as Lambda would.
    """

    def probe(clients: AwsClients, function_name: str, since: datetime) -> HealthReport:
        burst = workload_for(clients, function_name).invoke(
            invocations, notify=False, not_before=first_whole_minute(since)
        )
        started = (burst.started_at or datetime.now(UTC)).replace(second=0, microsecond=0)
        reported = started + PERIOD + reporting_lag(clients, function_name)
        return cloudwatch_probe(clients, function_name, since, now=reported)

    return probe


class IncidentRuns:
    """Apply a scenario, let the workload fail, follow the lifecycle; the health probe the verify function uses."""

    def workload_burst(self, function_name: str) -> list[dict[str, Any]]:
        """Three invocations of a lab workload (no alarm sent), as the health probe reads them; a member account's
        by its ARN (:func:`incident_responder.core.members.function_key`)."""
        clients = self.clients
        if function_name.startswith("arn:"):
            parts = function_name.split(":")
            clients, function_name = self.members[Member(parts[4], parts[3])][0], parts[6]  # type: ignore[attr-defined]
        burst = workload_for(clients, function_name).invoke(3, notify=False).invocations
        return [InvocationSample.model_validate(i).model_dump() for i in burst]

    def verification_probe(self) -> Any:
        """The verify function's health probe in the lab: a real burst of the workload (no alarm sent)."""
        return burst_probe(lambda clients, function_name: self.workload_burst(function_key(clients, function_name)))

    # -- one incident ----------------------------------------------------------------------------
    @property
    def state_machine_arn(self) -> str:
        return self.stack.output("StateMachineArn")

    def workload(self, function: str | None = None) -> Workload:
        """The emulator of ``function`` (default: data-processor), alarming on the stack's incident topic."""
        workload = workload_for(
            self.clients, function or self.sample.function_name, alert_topic_arn=self.stack.output("IncidentTopicArn")
        )
        workload.history_minutes = HISTORY_MINUTES
        return workload

    def inject(self, scenario: Scenario) -> list[str]:
        chaos = FaultInjector.for_function(scenario.workload.function, clients=self.clients, state_dir=self.chaos_state)
        return [line for fault in scenario.faults for line in chaos.apply(fault)]

    def restore(self, function: str | None = None) -> list[str]:
        return FaultInjector.for_function(
            function or self.sample.function_name, clients=self.clients, state_dir=self.chaos_state
        ).restore()

    def run(
        self,
        scenario: Scenario,
        *,
        on_state: Callable[[str, Any], None] | None = None,
        timeout: float = 600,
        approval: Approver = "auto",
        memory: bool = True,
    ) -> IncidentRecord:
        """Apply the scenario's faults, let the workload fail, follow the lifecycle to its end; the lab's
        approver does what the scenario's ``lifecycle.approval`` (else ``approval``) says. The scenario's earlier
        incidents run first, each to its end (the function's history then holds them), and the faults they leave
        (a fix rolled back) are restored before this one's are applied. ``memory`` False: the function's history is
        deleted before this incident starts (the same incident, as a responder without memory meets it)."""
        earlier = []
        for index in range(len(scenario.earlier)):
            past = self.run(scenario.as_earlier(index), on_state=on_state, timeout=timeout, approval=approval)
            earlier.append(earlier_summary(past))
            self.restore(scenario.workload.function)
        if not memory:
            self.forget(scenario.workload.function)
        # Counting (the bench): the calls the responder's functions make from here to the report.
        before = self.lab.calls() if getattr(self, "counting", False) else None
        started = time.monotonic()
        if scenario.workload.setup is not None:
            self.set_up(scenario.workload.function, scenario.workload.setup)
        self.attach_runbooks(scenario)
        self.inject(scenario)
        # With a caller's alert, the function's own alarms are evaluated but not sent: the caller's starts the incident.
        burst = self.workload(scenario.workload.function).invoke(
            scenario.workload.invocations,
            log_lines=scenario.workload.log_lines,
            app_error=scenario.workload.app_error,
            notify=scenario.alert is None,
        )
        if scenario.alert is not None:
            burst = burst.model_copy(update={"alert": self.publish_alert(scenario.workload.function, scenario.alert)})
        if burst.alert is None:
            return self._record(None, None, burst, started)
        # The incident the alert started, or the one under way for its fault that it joined.
        # (An alarm on a queue names no function: resolved, as ingest does, through the onboarded mappings.)
        incident = incident_from_alert(self.clients, burst.alert, self.stack.physical["BaselineTable"])
        incident_id = incident_for_alert(self.clients, self.stack.physical["IncidentStateTable"], incident)
        arn = f"{self.state_machine_arn.replace(':stateMachine:', ':execution:')}:{incident_id}"
        # What the alert found: the configuration the burst read before it ran (nothing changes it since).
        at_alert = burst.configuration or self._configuration(scenario.workload.function)
        loop = scenario.lifecycle
        decision = loop.approval or approval
        reports: dict[str, Any] = {}

        def watch(status: str | None) -> None:
            if status == "AWAITING_APPROVAL":
                acted = approver.act(
                    getattr(self.clients, "home", self.clients),
                    self.inbox_url,
                    incident_id,
                    APPROVER_ACTS[decision],
                    replay=loop.replay_approval,
                )
                reports["approver"] = acted.model_dump(exclude_none=True)
            elif status == "VERIFYING" and loop.reinject_during_verifying:
                reports["reinjected"] = self.inject(scenario)

        if loop.remediation_failure is not None:
            failure = loop.remediation_failure
            self.lab.fail_requests(failure.operation, times=failure.times, code=failure.code)
        try:
            execution = self.follow(arn, on_state=on_state, on_status=watch, timeout=timeout)
        finally:
            if loop.remediation_failure is not None:
                self.lab.clear_failures()
        ended = {"detail": {"executionArn": arn, "status": execution["status"]}}
        # In AWS an EventBridge rule hands the end to the reconcile function here (moto cannot deliver it), as an
        # asynchronous invocation: retried twice, then kept in the function's dead-letter queue.
        if execution["status"] != "SUCCEEDED":
            self.dispatcher.invoke_async(self.stack.functions["ReconcileFunction"], ended)
        # ... and, on every end, the report function: the page to the artifacts bucket, its link to the topic.
        self.dispatcher.invoke_async(self.stack.functions["ReportFunction"], ended)
        record = self._record(incident_id, execution, burst, started)
        if before is not None:
            record.metrics.update(self.responder_calls(before))
        end = self._configuration(scenario.workload.function)
        baseline = load_baseline(self.clients, scenario.workload.function).configuration
        record.end_state = {
            # What the account shows once the lifecycle ended: back at its baseline (remediated), or exactly
            # as the alert found it (nothing applied, or everything applied undone).
            "matches_baseline": not diff_configurations(baseline, end),
            "unchanged_since_alert": not diff_configurations(at_alert, end),
            "differences_from_baseline": [d.model_dump() for d in diff_configurations(baseline, end)][:20],
        }
        if reports:
            record.approval = {**(record.approval or {}), **reports}
        record.earlier = earlier
        return record

    def responder_keys(self) -> dict[str, str]:
        """The access keys the responder's functions sign with, each to its function's logical id: their own roles'
        (the lab gave them), and the member sessions they assumed (named after the function)."""
        from moto.sts.models import sts_backends

        logical = {name: logical_id for logical_id, name in self.stack.functions.items()}
        keys = {c["AWS_ACCESS_KEY_ID"]: logical_id for logical_id, c in self.stack.role_credentials.items()}
        for backends in list(sts_backends.values()):
            for backend in list(backends.values()):
                keys |= {
                    r.access_key_id: logical[r.session_name]
                    for r in list(backend.assumed_roles)
                    if r.session_name in logical
                }
        return keys

    def responder_calls(self, before: Counter[tuple[str, str, str]]) -> dict[str, Any]:
        """The AWS calls the responder's functions made since ``before`` (:meth:`Lab.calls`), in all, by API and by
        function (its logical id)."""
        keys = self.responder_keys()
        by_api: Counter[str] = Counter()
        by_function: Counter[str] = Counter()
        for (key, service, operation), count in (self.lab.calls() - before).items():
            if key in keys:
                by_api[f"{service}:{operation}"] += count
                by_function[keys[key]] += count
        return {
            "aws_calls": sum(by_api.values()),
            "aws_calls_by_api": dict(sorted(by_api.items())),
            "aws_calls_by_function": dict(sorted(by_function.items())),
        }

    def forget(self, function: str) -> None:
        """The function's history of incidents deleted: what the next incident of it finds is no past."""
        from incident_responder.state import keys

        self.clients.get("dynamodb").delete_item(
            TableName=self.stack.physical["IncidentStateTable"], Key={"incident_id": {"S": keys.history(function)}}
        )

    def publish_alert(self, function: str, alert: Alert) -> dict[str, Any]:
        """The caller's alert, as its own monitoring publishes it: the project alert JSON for ``function``, on the
        stack's incident topic (ingest starts the incident from it). Returns the alert."""
        arn = self.clients.get("lambda").get_function_configuration(FunctionName=function)["FunctionArn"]
        account, region = arn.split(":")[4], arn.split(":")[3]
        message = alert.error_message
        if message is not None:
            message = message.replace("{account}", account).replace("{region}", region)
        body = {
            "function_name": function,
            "detected_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "alert_id": str(uuid.uuid4()),
            "error_type": alert.error_type,
            **({"error_message": message} if message is not None else {}),
        }
        self.clients.get("sns").publish(TopicArn=self.stack.output("IncidentTopicArn"), Message=json.dumps(body))
        return body

    def _configuration(self, function: str) -> Any:
        raw = self.clients.get("lambda").get_function_configuration(FunctionName=function)
        return configuration_from(self.clients, raw)

    def attach_runbooks(self, scenario: Scenario) -> None:
        """The scenario's runbooks, and no other: stored as ``responder runbook set`` stores them."""
        from incident_responder.memory import runbooks

        bucket = self.stack.physical["ArtifactsBucket"]
        for listed in runbooks.list_runbooks(self.clients, bucket):  # an earlier scenario's, in this lab
            runbooks.remove(self.clients, bucket, listed.scope)
        for runbook in scenario.runbooks:
            runbooks.store(self.clients, bucket, runbook.scope(), runbook.text.encode())

    def set_up(self, function: str, setup: Setup) -> None:
        """The function's healthy configuration, then its baseline recorded again: what it was onboarded with. What
        it had before (its configuration and its onboarded baseline) is put back between scenarios
        (:meth:`undo_set_ups`), so the next scenario needs no redeploy."""
        lam = self.clients.get("lambda")
        if function not in self.set_up_undo:  # an earlier incident of the same scenario set it up already
            self.set_up_undo[function] = self._undo_set_up(function)
        given = setup.model_fields_set
        if "reserved_concurrency" in given:
            if setup.reserved_concurrency is None:
                lam.delete_function_concurrency(FunctionName=function)
            else:
                lam.put_function_concurrency(
                    FunctionName=function, ReservedConcurrentExecutions=setup.reserved_concurrency
                )
        changes = {"Timeout": setup.timeout, "MemorySize": setup.memory}
        changes = {key: value for key, value in changes.items() if value is not None}
        if changes:
            lam.update_function_configuration(FunctionName=function, **changes)
        record_baseline(self.clients, function)
        # Not what onboarding recorded, even when recorded within the same second: the next scenario needs a refresh.
        self.onboarded.pop(function, None)

    def _undo_set_up(self, function: str) -> Callable[[], None]:
        """How to put back what :meth:`set_up` changes of ``function``, read before it does."""
        lam, ddb = self.clients.get("lambda"), self.clients.get("dynamodb")
        before = lam.get_function_configuration(FunctionName=function)
        reserved = lam.get_function_concurrency(FunctionName=function).get("ReservedConcurrentExecutions")
        table, key = baseline_table_name(), {"function_name": {"S": function_key(self.clients, function)}}
        baseline = ddb.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
        onboarded = self.onboarded.get(function)

        def undo() -> None:
            if reserved is None:
                lam.delete_function_concurrency(FunctionName=function)
            else:
                lam.put_function_concurrency(FunctionName=function, ReservedConcurrentExecutions=reserved)
            lam.update_function_configuration(
                FunctionName=function, Timeout=before["Timeout"], MemorySize=before["MemorySize"]
            )
            if baseline is not None and onboarded is not None:
                ddb.put_item(TableName=table, Item=baseline)
                self.onboarded[function] = onboarded

        return undo

    def undo_set_ups(self) -> None:
        """Every function a scenario's setup changed, as it was before (then checked like any other)."""
        while self.set_up_undo:
            _, undo = self.set_up_undo.popitem()
            undo()

    def follow(
        self,
        arn: str,
        *,
        on_state: Callable[[str, Any], None] | None = None,
        on_status: Callable[[str | None], None] | None = None,
        timeout: float = 600,
    ) -> dict[str, Any]:
        """Wait for the execution to end, reporting each state (name, time entered) as it is entered, and each
        lifecycle status the incident-state item takes. The history is read only for ``on_state``: reading it
        whole at every poll would cost the lab more CPU than the incident itself."""
        sfn = self.clients.get("stepfunctions")
        incident_id = incident_id_of(arn)
        # Event-driven: moto announces history events and table writes in this process (engine.LAB_CHANGES);
        # this looks again only when something it reads changed.
        kinds = ("execution", "table") if on_status else ("execution",)
        changes = LAB_CHANGES.seen(*kinds)
        seen, status = 0, None
        deadline = time.monotonic() + timeout
        described: dict[str, Any] | None = None
        news = {"execution", "table"}  # what changed since the last look (at first: everything is news)
        while True:
            if "execution" in news or described is None:
                try:
                    described = sfn.describe_execution(executionArn=arn)
                except sfn.exceptions.ExecutionDoesNotExist:
                    if time.monotonic() > deadline:
                        raise
                    changes = LAB_CHANGES.wait(changes, *kinds, timeout=UNANNOUNCED_LOOK_SECONDS)
                    continue
                if on_state:
                    entered = [e for e in history(sfn, arn) if "stateEnteredEventDetails" in e]
                    for event in entered[seen:]:
                        on_state(event["stateEnteredEventDetails"]["name"], event["timestamp"])
                    seen = len(entered)
            if on_status and "table" in news:
                table = self.stack.physical["IncidentStateTable"]
                now = (get_incident_state(self.clients, table, incident_id) or {}).get("status")
                if now != status:
                    status = now
                    on_status(now)
            left = deadline - time.monotonic()
            if described["status"] != "RUNNING" or left <= 0:
                return described
            before = changes
            changes = LAB_CHANGES.wait(changes, *kinds, timeout=min(left, UNANNOUNCED_LOOK_SECONDS))
            if changes != before:
                # A state's transition is several history events and table writes in a row: looked at once.
                time.sleep(COALESCE_SECONDS)
                changes = LAB_CHANGES.seen(*kinds)
            # Only what changed is read again; with no announcement (moto in another process), everything.
            news = {k for k, old, new in zip(kinds, before, changes, strict=True) if old != new} or set(kinds)
