"""The lab's incident runs: between two scenarios, the lab put back as a fresh one would be."""

from __future__ import annotations

from typing import Any

from incident_responder.account.baseline import load_baseline
from incident_responder.account.drift import diff_configurations
from incident_responder.core.members import member_of


class BetweenScenarios:
    """Every fault restored, what an incident leaves cleared; or why the lab needs a refresh."""

    def ready_for(self, scenario: Any, model: str = "offline", *, fresh: bool = False) -> None:
        """The lab made ready for ``scenario``: restored clean (unless ``fresh``: nothing ran in it yet) with the stack
        parameters the scenario asks for, or redeployed when it cannot be (or they differ)."""
        wanted = scenario.parameters.given()
        if (not fresh and self.clean_restore()) or not self.runs_with(wanted):
            self.refresh(model, scenario_parameters=wanted)

    def clean_restore(self) -> list[str]:
        """Between two scenarios, without redeploying: every fault restored, then the account checked back
        at what onboarding recorded, and what an incident leaves behind cleared (incident tables, artifacts,
        queues, the workloads' logs and metrics). Returns why the lab is not clean (then :meth:`refresh`);
        an empty list means the next scenario starts as it would in a fresh lab, on warm functions."""
        for function in self.workload_names:
            self.restore(function)
        self.undo_set_ups()  # after the faults: their restores put back what the setup had
        members = [self.member(m.account, m.region) for m in self.members]  # type: ignore[attr-defined]
        for member in members:  # an organisation's: each member's sample workload
            member.restore(member.sample.function_name)
        problems = []
        sfn = self.clients.get("stepfunctions")
        if sfn.list_executions(stateMachineArn=self.state_machine_arn, statusFilter="RUNNING")["executions"]:
            problems.append("an execution is still running")
        for function in self.workload_names:
            record = load_baseline(self.clients, function)
            if record.captured_at != self.onboarded.get(function):
                problems.append(f"{function}: its baseline was recorded again (a scenario's setup)")
            differences = diff_configurations(record.configuration, self._configuration(function))
            if differences:
                problems.append(f"{function}: {len(differences)} difference(s) from its baseline")
        for member in members:
            function = member.sample.function_name
            differences = diff_configurations(
                load_baseline(member.clients, function).configuration, member._configuration(function)
            )
            if differences:
                problems.append(f"{function} of {member_of(member.clients)}: {len(differences)} difference(s)")
        if problems:
            return problems
        ddb = self.clients.get("dynamodb")
        for logical_id in ("IncidentStateTable", "IncidentContextTable"):
            _empty_table(ddb, self.stack.physical[logical_id])
        s3 = self.clients.get("s3")
        bucket = self.stack.physical["ArtifactsBucket"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for item in page.get("Contents", []):
                s3.delete_object(Bucket=bucket, Key=item["Key"])
        sqs = self.clients.get("sqs")
        for url in sqs.list_queues().get("QueueUrls", []):
            _drain(sqs, url)  # PurgeQueue is allowed once a minute per queue
        logs_of = [(self.clients.get("logs"), f) for f in self.workload_names]
        logs_of += [(m.clients.get("logs"), m.sample.function_name) for m in members]
        for logs, function in logs_of:
            group = f"/aws/lambda/{function}"
            for page in logs.get_paginator("describe_log_streams").paginate(logGroupName=group):
                for stream in page["logStreams"]:
                    logs.delete_log_stream(logGroupName=group, logStreamName=stream["logStreamName"])
        self.lab.clear_metrics()
        self.lab.trail.clear()  # the next incident's recent changes are its own
        for stale in self.chaos_state.glob("*.json"):
            stale.unlink()
        return []


def _drain(sqs: Any, url: str) -> None:
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60).get("Messages"):
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
        )


def _empty_table(ddb: Any, table: str) -> None:
    keys = [k["AttributeName"] for k in ddb.describe_table(TableName=table)["Table"]["KeySchema"]]
    for page in ddb.get_paginator("scan").paginate(
        TableName=table,
        ProjectionExpression=", ".join(f"#k{i}" for i in range(len(keys))),
        ExpressionAttributeNames={f"#k{i}": key for i, key in enumerate(keys)},
    ):
        items = page.get("Items", [])
        for start in range(0, len(items), 25):  # BatchWriteItem takes 25 requests at most
            requests = [
                {"DeleteRequest": {"Key": {key: item[key] for key in keys}}} for item in items[start : start + 25]
            ]
            while requests:
                left = ddb.batch_write_item(RequestItems={table: requests}).get("UnprocessedItems", {})
                requests = left.get(table, [])
