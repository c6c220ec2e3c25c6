"""Each diagnosed fault names the failure catalogue entry it matched (``failure_mode``): the log reader names the
entry an error prints, the investigator's submission keeps only entries of the faults it names, a scenario may
expect them, and the report shows them with the AWS pages they cite."""

from __future__ import annotations

import pytest

from incident_responder.catalogue.queries import MODES_BY_ID, failure_mode_of
from incident_responder.core.contracts import Diagnosis
from incident_responder.investigation.investigator import vet_failure_modes
from incident_responder.lab.evaluation import score
from incident_responder.lab.pipeline.record import IncidentRecord
from incident_responder.lab.scenario import Scenario, ScenarioError, load_scenario
from incident_responder.reporting.report import render_html
from tests.incident_details import _detail


@pytest.mark.parametrize(
    ("error_type", "message", "expected"),
    [
        ("Runtime.HandlerNotFound", "index.handler is undefined or not exported", "handler-not-found"),
        ("Runtime.ImportModuleError", "Unable to import module", "import-module-error"),
        ("Error", "Cannot find module 'index'", "import-module-error"),  # by a message AWS prints
        ("Sandbox.Timedout", "Task timed out after 1.00 seconds", "function-timeout"),
        ("KeyError", "'order_id'", None),  # the code's own error: no entry prints it
        (None, None, None),
    ],
)
def test_an_error_names_the_one_entry_that_prints_it(error_type, message, expected):
    assert failure_mode_of(error_type, message) == expected


def _diagnosis(**changes) -> Diagnosis:
    return Diagnosis.model_validate(
        {
            "root_cause": "the role lost its S3 policy",
            "fault_types": ["permission_loss"],
            "severity": "high",
            "confidence": "high",
        }
        | changes
    )


def test_the_submission_keeps_only_entries_of_the_faults_it_names():
    vetted = vet_failure_modes(
        _diagnosis(failure_modes=["iam-permission-lost", "function-timeout", "gremlins", "iam-permission-lost"])
    )
    assert vetted.failure_modes == ["iam-permission-lost"]
    assert vetted.investigation_gaps == [
        "failure mode function-timeout is an entry for timeout, which the diagnosis does not name",
        "failure mode 'gremlins' is not an entry of the failure catalogue",
    ]
    assert vet_failure_modes(_diagnosis(failure_modes=["iam-permission-lost"])).investigation_gaps == []


SCENARIO = """name: s3-policy-revoked
faults:
  - kind: iam_revoke
    target: s3
expect:
  status: REMEDIATED
  fault_types: [permission_loss]
  failure_modes: [{modes}]
  actions: [restore_iam_policy]
"""


def test_a_scenario_expects_only_entries_of_the_catalogue(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(modes="iam-permission-lost"))
    assert load_scenario(path).expect.failure_modes == ["iam-permission-lost"]
    path.write_text(SCENARIO.format(modes="iam-permission-gone"))
    with pytest.raises(ScenarioError, match=r"expect\.failure_modes.*iam-permission-gone"):
        load_scenario(path)


def _record(modes: list[str]) -> IncidentRecord:
    return IncidentRecord(
        incident_id="inc-1",
        status="PROPOSAL_READY",
        diagnosis={"fault_types": ["permission_loss"], "failure_modes": modes},
        proposal={"actions": []},
        metrics={},
        execution={},
        workload={},
    )


def test_the_score_reports_failure_modes_and_fails_a_scenario_that_expects_others():
    expecting = Scenario.model_validate(
        {"name": "s", "expect": {"fault_types": ["permission_loss"], "failure_modes": ["iam-permission-lost"]}}
    )
    assert score(expecting, _record(["iam-permission-lost"]), None).failures == []
    wrong = score(expecting, _record(["logs-not-delivered"]), None)
    assert wrong.failure_modes == ["logs-not-delivered"]
    assert wrong.failures == ["failure_modes ['logs-not-delivered'] (expected ['iam-permission-lost'])"]
    # Unset: not checked, still reported.
    silent = Scenario.model_validate({"name": "s", "expect": {"fault_types": ["permission_loss"]}})
    assert score(silent, _record(["logs-not-delivered"]), None).failures == []


def test_the_report_names_each_entry_with_the_aws_pages_it_cites():
    detail = _detail("PROPOSAL_READY")
    detail["diagnosis"] = {**detail["diagnosis"], "failure_modes": ["iam-permission-lost"]}
    page = render_html(detail)
    mode = MODES_BY_ID["iam-permission-lost"]
    assert "<code>iam-permission-lost</code>: " + mode.title.replace("'", "&#x27;") in page
    assert all(f"<code>{url}</code>" in page for url in mode.sources) and 'href="https' not in page
