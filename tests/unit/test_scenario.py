import json
from pathlib import Path

import pytest

from incident_responder.lab.scenario import FaultType, Scenario, ScenarioError, load_scenario

VALID = """
name: s3-policy-revoked
faults:
  - kind: iam_revoke
    target: s3
  - kind: throttle
    reserved_concurrency: 0
  - kind: timeout
    seconds: 1
workload:
  function: data-processor
  invocations: 3
  log_lines: ["noise"]
  app_error: null
expect:
  status: PROPOSAL_READY
  fault_types: [permission_loss]
  actions: [restore_iam_policy]
"""


def test_valid_scenario_loads(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(VALID)
    scenario = load_scenario(path)
    assert [f.kind for f in scenario.faults] == ["iam_revoke", "throttle", "timeout"]
    assert scenario.faults[0].target == "s3"
    assert scenario.expect.fault_types == [FaultType.PERMISSION_LOSS]
    assert scenario.workload.log_lines == ["noise"]


@pytest.mark.parametrize(
    "text, field",
    [
        (VALID.replace("target: s3", "target: redis"), "faults.0.iam_revoke.target"),
        (VALID.replace("kind: timeout\n", "kind: bad_deploy\n    colour: red\n"), "faults.2.bad_deploy.colour"),
        (VALID.replace("reserved_concurrency: 0", "reserved_concurrency: 5"), "faults.1.throttle.reserved_concurrency"),
        (VALID.replace("kind: timeout", "kind: meteor"), "faults.2"),
        (VALID.replace("[permission_loss]", "[gremlins]"), "expect.fault_types.0"),
        (VALID.replace("invocations: 3", "invocations: 3\n  colour: red"), "workload.colour"),
        (VALID.replace("invocations: 3", "invocations: 3\n  setup: {memory: 64}"), "workload.setup.memory"),
        (VALID.replace("invocations: 3", "invocations: 3\n  setup: {cpu: 2}"), "workload.setup.cpu"),
    ],
)
def test_broken_scenario_names_file_and_field(tmp_path, text, field):
    refused_naming(tmp_path / "broken.yaml", text, field)


def refused_naming(path, text: str, field: str) -> None:
    """``text`` written to ``path`` is refused with an error naming the file and ``field``."""
    path.write_text(text)
    with pytest.raises(ScenarioError) as excinfo:
        load_scenario(path)
    assert str(path) in str(excinfo.value)
    assert field in str(excinfo.value)


def test_not_yaml_and_missing_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(bad)
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "missing.yaml")


def test_every_scenario_in_the_repository_loads():
    from pathlib import Path

    files = sorted((Path(__file__).parents[2] / "scenarios").rglob("*.yaml"))
    assert files
    for path in files:
        assert load_scenario(path).name == path.stem


def test_setup_tells_no_reservation_from_not_given(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(VALID.replace("invocations: 3", "invocations: 3\n  setup: {reserved_concurrency: null}"))
    setup = load_scenario(path).workload.setup
    assert setup.reserved_concurrency is None and setup.model_fields_set == {"reserved_concurrency"}


LOOP = VALID.replace("  status: PROPOSAL_READY", "  status: REMEDIATED")


@pytest.mark.parametrize(
    "lifecycle, field",
    [
        ("lifecycle: {approval: maybe}", "lifecycle.approval"),
        ("lifecycle: {remediation_failure: {operation: put-concurrency}}", "lifecycle.remediation_failure.operation"),
        ("lifecycle: {replay: true}", "lifecycle.replay"),
    ],
)
def test_a_broken_lifecycle_block_names_its_field(tmp_path, lifecycle, field):
    path = tmp_path / "s.yaml"
    path.write_text(LOOP + lifecycle + "\n")
    with pytest.raises(ScenarioError, match=field.replace(".", r"\.")):
        load_scenario(path)


@pytest.mark.parametrize(
    "lifecycle, approver, expected",
    [
        ("", "auto", "REMEDIATED"),
        ("", "reject", "REJECTED"),
        ("", "none", "APPROVAL_EXPIRED"),
        # A scenario that says who approves is about that: the command line does not change it.
        ("lifecycle: {approval: auto, replay_approval: true}", "none", "REMEDIATED"),
    ],
)
def test_who_approves_decides_the_expected_end(tmp_path, lifecycle, approver, expected):
    from incident_responder.lab.evaluation import expected_status

    path = tmp_path / "s.yaml"
    path.write_text(LOOP + lifecycle + "\n")
    assert expected_status(load_scenario(path), approver) == expected
    nothing = load_scenario(path).model_copy(
        update={"expect": load_scenario(path).expect.model_copy(update={"status": "PROPOSAL_READY"})}
    )
    assert expected_status(nothing, approver) == "PROPOSAL_READY"  # nothing automatable: no approval asked


def test_a_file_that_is_not_utf8_names_the_byte(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"name: t\nfaults: []\n# \xff\xfe\n")
    with pytest.raises(ScenarioError, match=r"bad.yaml: not UTF-8 text \(invalid start byte at byte 21\)"):
        load_scenario(bad)


def test_every_fault_kind_maps_to_one_fault_type():
    from typing import get_args

    from incident_responder.lab.scenario import FAULT_TYPE_OF_KIND, Fault

    kinds = {get_args(m.model_fields["kind"].annotation)[0] for m in get_args(get_args(Fault)[0])}
    from chaos.kinds import KINDS

    assert set(FAULT_TYPE_OF_KIND) == kinds == set(KINDS) and len(kinds) >= 16
    assert all(isinstance(t, FaultType) for t in FAULT_TYPE_OF_KIND.values())


def test_the_corpus_expects_the_fault_types_its_kinds_produce():
    from pathlib import Path

    from incident_responder.lab.scenario import FAULT_TYPE_OF_KIND

    checked = 0
    for path in sorted((Path(__file__).parents[2] / "scenarios").rglob("*.yaml")):
        scenario = load_scenario(path)
        if scenario.faults:
            produced = {FAULT_TYPE_OF_KIND[f.kind] for f in scenario.faults}
            if scenario.workload.app_error:  # the code's own bug, beside the faults (what fails their events)
                produced.add(FaultType.APPLICATION_ERROR)
            assert set(scenario.expect.fault_types) == produced, path.name
            checked += 1
    assert checked >= 40


def test_a_status_no_incident_ends_in_is_refused(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(VALID.replace("status: PROPOSAL_READY", "status: DIAGNOSED"))
    with pytest.raises(ScenarioError, match=r"expect\.status: .*DIAGNOSED is not a status an incident ends in"):
        load_scenario(path)


@pytest.mark.parametrize("name", ["../../outside", "reports/../../x", "a/b", "..", ".hidden", "a\\b", "x\n", "x" * 101])
def test_a_name_that_is_no_file_name_is_refused(tmp_path, name):
    """Defect: the name became a path: eval --out, --record and --replay wrote and read FOLDER/../../outside."""
    path = tmp_path / "s.yaml"
    path.write_text(VALID.replace("name: s3-policy-revoked", f"name: {json.dumps(name)}"))
    with pytest.raises(ScenarioError, match=r"s\.yaml: name: .*letter or digit"):
        load_scenario(path)


def test_a_scenarios_files_stay_in_their_folder(tmp_path):
    from incident_responder.lab.scenario import path_of

    assert path_of(tmp_path, "s3-policy-revoked", ".json") == tmp_path / "s3-policy-revoked.json"
    for name in ("../outside", "/etc/passwd", "a/../../b", ".."):
        with pytest.raises(ScenarioError, match="not a scenario name"):
            path_of(tmp_path, name, ".json")


def test_a_workload_that_raised_no_alarm_is_the_reason_the_scenario_failed():
    """Defect: the score said only "status NO_ALERT", and `responder run` ended in a KeyError traceback."""
    from incident_responder.lab.evaluation import score
    from incident_responder.lab.pipeline.record import IncidentRecord

    quiet = IncidentRecord(
        incident_id=None,
        status="NO_ALERT",
        metrics={"latency_ms": 150},
        execution={},
        workload={"invocations": ["succeeded", "succeeded", "succeeded"], "alert": None},
    )
    assert quiet.no_alert == "the workload raised no alarm (3 invocations: 3 succeeded): no incident to follow"
    scored = score(Scenario.model_validate({"name": "healthy"}), quiet, None)
    assert not scored.passed and scored.failures == [quiet.no_alert]


def test_a_scenario_file_given_as_the_corpus_is_a_corpus_of_one(tmp_path):
    """Defect: `responder eval FILE.yaml` said "no scenario files"; one file is a corpus of one (the corpus run
    in tests/functional/test_evaluation.py starts `responder eval` on a folder)."""
    from incident_responder.lab.evaluation import load_corpus

    path = Path(__file__).parents[2] / "scenarios" / "s3-policy-revoked.yaml"
    ((found, scenario),) = load_corpus(path)
    assert found == path and scenario.name == "s3-policy-revoked"
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "one.yaml").write_text(path.read_text().replace("s3-policy-revoked", "one"))
    assert [s.name for _, s in load_corpus(tmp_path)] == ["one"]  # a folder's subfolders too


ALERTED = VALID.replace(
    "expect:",
    'alert:\n  error_type: ServiceException\n  error_message: "The AWS Lambda service encountered an internal error."\nexpect:',
)


def test_scenario_alert_loads(tmp_path):
    path = tmp_path / "alerted.yaml"
    path.write_text(ALERTED)
    scenario = load_scenario(path)
    assert scenario.alert is not None
    assert scenario.alert.error_type == "ServiceException"
    assert scenario.alert.error_message == "The AWS Lambda service encountered an internal error."
    path.write_text(VALID)
    assert load_scenario(path).alert is None


@pytest.mark.parametrize(
    "text, field",
    [
        (ALERTED.replace("  error_type: ServiceException\n", ""), "alert.error_type"),
        (ALERTED.replace("error_type: ServiceException", "error_type: ''"), "alert.error_type"),
        (ALERTED.replace("error_type: ServiceException", "error_type: 'Service Exception; rm'"), "alert.error_type"),
        (ALERTED.replace("error_type: ServiceException", f"error_type: {'E' * 201}"), "alert.error_type"),
        (ALERTED.replace('error_message: "The', f'error_message: "{"x" * 2000}'), "alert.error_message"),
        (ALERTED.replace("error_type: ServiceException", "error_type: [ServiceException]"), "alert.error_type"),
        (
            ALERTED.replace("  error_type: ServiceException", "  error_type: ServiceException\n  function_name: x"),
            "alert.function_name",
        ),
        (VALID.replace("expect:", "alert: ServiceException\nexpect:"), "alert"),
    ],
)
def test_broken_alert_names_file_and_field(tmp_path, text, field):
    refused_naming(tmp_path / "broken-alert.yaml", text, field)


def test_scenario_alert_is_published_as_a_project_alert():
    from types import SimpleNamespace

    from incident_responder.intake.alerts import parse_alert
    from incident_responder.lab.pipeline.incident import IncidentRuns
    from incident_responder.lab.scenario import Alert

    published = []
    arn = "arn:aws:lambda:eu-west-1:111122223333:function:orders-api"
    lam = SimpleNamespace(get_function_configuration=lambda FunctionName: {"FunctionArn": arn})
    sns = SimpleNamespace(publish=lambda **kw: published.append(kw) or {"MessageId": "m"})
    runs = SimpleNamespace(
        clients=SimpleNamespace(get=lambda name: {"lambda": lam, "sns": sns}[name]),
        stack=SimpleNamespace(output=lambda key: f"topic:{key}"),
    )
    alert = Alert(error_type="AccessDeniedException", error_message="User: arn:aws:iam::{account}:role/r in {region}")
    body = IncidentRuns.publish_alert(runs, "orders-api", alert)
    assert published[0]["TopicArn"] == "topic:IncidentTopicArn"
    assert json.loads(published[0]["Message"]) == body
    assert body["error_message"] == "User: arn:aws:iam::111122223333:role/r in eu-west-1"
    incident = parse_alert(body)  # what ingest reads of it
    assert (incident.function_name, incident.error_type) == ("orders-api", "AccessDeniedException")
    assert IncidentRuns.publish_alert(runs, "orders-api", alert)["alert_id"] != body["alert_id"]


RUNBOOK = VALID.replace(
    "expect:", "runbooks:\n  - mode: eni-limit-reached\n    text: |\n      1. raise the quota\nexpect:"
)


def test_runbooks_load_with_their_citation(tmp_path):
    from incident_responder.memory.runbooks import digest_of

    path = tmp_path / "s.yaml"
    path.write_text(RUNBOOK.replace("  actions:", "  handover_cites_runbook: true\n  actions:"))
    scenario = load_scenario(path)
    (runbook,) = scenario.runbooks
    digest = digest_of(b"1. raise the quota\n")
    assert runbook.citation == f"runbook:mode/eni-limit-reached@{digest}"
    assert scenario.expect.handover_cites_runbook is True


@pytest.mark.parametrize(
    "entry, says",
    [
        ("  - mode: no-such-entry\n    text: x", "not a catalogue entry"),
        ("  - function: ../etc\n    text: x", "not a Lambda function name"),
        ("  - function: data-processor\n    mode: eni-limit-reached\n    text: x", "exactly one of function and mode"),
        ("  - text: x", "exactly one of function and mode"),
        ('  - function: data-processor\n    text: "a\\u0000b"', "U\\+0000"),
        (f"  - function: data-processor\n    text: {'x' * 16385}", "at most 16384 bytes"),
        ("  - function: data-processor\n    text: x\n    digest: abc", "digest"),
    ],
)
def test_a_runbook_the_cli_would_refuse_is_refused(tmp_path, entry, says):
    path = tmp_path / "s.yaml"
    path.write_text(VALID.replace("expect:", f"runbooks:\n{entry}\nexpect:"))
    with pytest.raises(ScenarioError, match=says):
        load_scenario(path)


def test_the_score_checks_that_the_hand_over_cites_the_scenarios_runbook_exactly():
    from incident_responder.lab.evaluation import score
    from incident_responder.lab.pipeline.record import IncidentRecord

    scenario = Scenario.model_validate(
        {
            "name": "s",
            "runbooks": [{"mode": "eni-limit-reached", "text": "1. raise the quota\n"}],
            "expect": {"fault_types": ["vpc_capacity_exhausted"], "handover_cites_runbook": True},
        }
    )
    (runbook,) = scenario.runbooks

    def record(*citations):
        steps = [{"fault_type": "vpc_capacity_exhausted", "text": "step", "runbook": c} for c in citations]
        return IncidentRecord(
            incident_id="i",
            status="PROPOSAL_READY",
            diagnosis={"fault_types": ["vpc_capacity_exhausted"]},
            proposal={"actions": [], "handover": steps},
            metrics={},
            execution={},
        )

    assert score(scenario, record(runbook.citation), None).failures == []
    stale = runbook.citation[:-1] + ("0" if runbook.citation[-1] != "0" else "1")  # another version's digest
    assert "hand-over citations" in score(scenario, record(stale, None), None).failures[0]
    assert "hand-over citations" in score(scenario, record(), None).failures[0]


# -- memory: earlier incidents, stack parameters, who approved, fewer turns than the first time -------------------
EARLIER = {"faults": [{"kind": "timeout", "seconds": 1}], "status": "ROLLED_BACK"}


def test_earlier_incidents_load_as_scenarios_of_the_same_workload(tmp_path):
    scenario = Scenario.model_validate(
        {
            "name": "again",
            "workload": {"function": "orders-api", "invocations": 4},
            "earlier": [{**EARLIER, "lifecycle": {"reinject_during_verifying": True}}],
            "parameters": {"AutoApprove": "low", "RecurrenceHours": 2},
            "expect": {"approved_by": "person", "fewer_investigation_turns": False},
        }
    )
    past = scenario.as_earlier(0)
    assert past.name == "again.earlier-1" and past.workload == scenario.workload
    assert past.expect.status == "ROLLED_BACK" and past.lifecycle.reinject_during_verifying
    assert not past.earlier  # its own past is not run again
    assert scenario.parameters.given() == {"AutoApprove": "low", "RecurrenceHours": "2"}


@pytest.mark.parametrize(
    "data, field",
    [
        ({"earlier": [{"faults": [], "status": "REMEDIATED"}]}, "earlier.0.faults"),  # an incident needs a fault
        ({"earlier": [{**EARLIER, "status": "REMEDIATING"}]}, "earlier.0.status"),  # not an end
        ({"earlier": [EARLIER] * 4}, "earlier"),  # at most three
        ({"parameters": {"MemoryDays": 3}}, "parameters.MemoryDays"),  # not one the lab redeploys
        ({"parameters": {"AutoApprove": "high"}}, "parameters.AutoApprove"),
        ({"parameters": {"RecurrenceHours": 0}}, "parameters.RecurrenceHours"),
        ({"expect": {"approved_by": "someone"}}, "expect.approved_by"),
        ({"expect": {"fewer_investigation_turns": True}}, "earlier incident"),  # nothing to compare with
    ],
)
def test_a_broken_memory_block_names_its_field(tmp_path, data, field):
    path = tmp_path / "broken.yaml"
    path.write_text(json.dumps({"name": "broken", **data}))
    with pytest.raises(ScenarioError, match=field.replace(".", r"\.")):
        load_scenario(path)


def test_the_score_checks_the_earlier_ends_who_approved_and_the_turns_against_the_first_time():
    from incident_responder.lab.evaluation import score
    from incident_responder.lab.pipeline.record import IncidentRecord
    from incident_responder.review.policy import AUTO_APPROVER

    scenario = Scenario.model_validate(
        {
            "name": "again",
            "earlier": [EARLIER],
            "expect": {"status": "PROPOSAL_READY", "approved_by": "person", "fewer_investigation_turns": True},
        }
    )

    def record(*, ended="ROLLED_BACK", approved_by="alice@example.com", turns=2, tokens=5000):
        first = {"status": ended, "turns_by_agent": {"investigation": 3}, "tokens_by_agent": {"investigation": 9000}}
        return IncidentRecord(
            incident_id="i",
            status="PROPOSAL_READY",
            metrics={"turns_by_agent": {"investigation": turns}, "tokens_by_agent": {"investigation": tokens}},
            execution={},
            approval={"approved_by": approved_by} if approved_by else None,
            earlier=[{"incident_id": "e", **first}],
        )

    assert score(scenario, record(), None).failures == []
    assert score(scenario, record(ended="REMEDIATED"), None).failures == [
        "earlier incident 1 ended REMEDIATED (expected ROLLED_BACK)"
    ]
    assert score(scenario, record(approved_by=AUTO_APPROVER), None).failures == ["approved by policy (expected person)"]
    assert score(scenario, record(approved_by=None), None).failures == ["approved by nobody (expected person)"]
    # Fewer turns but not fewer tokens (or the reverse) is not what memory is for.
    for worse in ({"turns": 3}, {"tokens": 9000}):
        (failure,) = score(scenario, record(**worse), None).failures
        assert failure.startswith("investigation turns") and failure.endswith("(expected fewer)")
