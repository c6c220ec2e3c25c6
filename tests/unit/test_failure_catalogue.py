"""The failure catalogue (incident_responder.catalogue): the page is what the script renders, the log
reader's tables are the catalogue's signatures, and every entry is consistent with the responder's contracts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

from incident_responder.account import log_records
from incident_responder.catalogue.failure_mode import AREAS, FailureMode, Signature
from incident_responder.catalogue.queries import FAILURE_MODES, counts, modes_by_fault_type, signature_categories
from incident_responder.core.contracts import ACTION_FOR_FAULT, ActionType, FaultType
from tests.scripts_by_path import load_script

REPO = Path(__file__).resolve().parents[2]
KINDS = ("error_code", "platform_error", "network_error", "message")


@pytest.fixture(scope="module")
def catalogue_script():
    return load_script("catalogue", module_name="catalogue_script")


def test_the_committed_page_is_what_the_script_renders(catalogue_script):
    page = REPO / "docs" / "failure-catalogue.md"
    assert page.read_text(encoding="utf-8") == catalogue_script.render(), (
        "docs/failure-catalogue.md differs from the catalogue: run `python scripts/catalogue.py`"
    )


def test_check_exits_1_and_says_what_to_run_when_the_page_is_stale(catalogue_script, tmp_path, monkeypatch, capsys):
    page = tmp_path / "failure-catalogue.md"
    monkeypatch.setattr(catalogue_script, "PAGE", page)
    assert catalogue_script.main(["--check"]) == 1  # missing
    page.write_text(catalogue_script.render().replace("Diagnosed", "Found"), encoding="utf-8")
    assert catalogue_script.main(["--check"]) == 1  # stale
    assert "python scripts/catalogue.py" in capsys.readouterr().err
    assert catalogue_script.main([]) == 0
    assert catalogue_script.main(["--check"]) == 0


def test_the_page_shows_the_counts_and_every_mode(catalogue_script):
    page = catalogue_script.render()
    numbers = counts()
    row = f"| {numbers['listed']} | {numbers['diagnosed']} | {numbers['fixed']} | {numbers['handed_over']} |"
    assert row in page
    for mode in FAILURE_MODES:
        assert f'<a id="{mode.id}"></a>' in page and f"### {mode.title}" in page
        assert all(f"({url})" in page for url in mode.sources)


def test_log_records_tables_are_the_catalogues_signatures():
    assert signature_categories("error_code") == log_records.AWS_ERROR_CATEGORIES
    assert signature_categories("platform_error") == log_records.PLATFORM_ERRORS
    assert signature_categories("network_error") == dict.fromkeys(log_records.NETWORK_ERRORS, "network")


def test_the_tables_keep_every_string_the_log_reader_classified_before_the_catalogue():
    """The hand-written tables the catalogue replaced, plus ENOSPC: nothing lost, nothing reclassified."""
    before = {
        **dict.fromkeys(
            (
                "AccessDenied",
                "AccessDeniedException",
                "UnauthorizedOperation",
                "UnauthorizedException",
                "AuthorizationError",
                "AuthorizationErrorException",
                "NotAuthorized",
            ),
            "access_denied",
        ),
        **dict.fromkeys(
            (
                "ProvisionedThroughputExceededException",
                "ThrottlingException",
                "Throttling",
                "ThrottledException",
                "TooManyRequestsException",
                "RequestLimitExceeded",
                "RequestThrottled",
                "RequestThrottledException",
                "SlowDown",
                "TransactionConflictException",
            ),
            "throttled",
        ),
        **dict.fromkeys(
            (
                "KMSDisabledException",
                "KMSAccessDeniedException",
                "KMSInvalidStateException",
                "KMSNotFoundException",
                "KMSThrottlingException",
                "DisabledException",
                "KeyUnavailableException",
            ),
            "kms",
        ),
    }
    assert signature_categories("error_code") == {**before, "ENOSPC": "storage"}
    network = log_records.NETWORK_ERRORS
    assert network == {
        "ConnectTimeoutError",
        "ConnectTimeout",
        "ConnectionError",
        "EndpointConnectionError",
        "ConnectionClosedError",
        "ReadTimeoutError",
        "TimeoutError",
        "ETIMEDOUT",
        "ECONNREFUSED",
        "ECONNRESET",
        "EHOSTUNREACH",
        "ENETUNREACH",
        "EAI_AGAIN",
        "ENOTFOUND",
    }
    assert signature_categories("platform_error") == {
        "Sandbox.Timedout": "timeout",
        "Runtime.OutOfMemory": "out_of_memory",
        "Runtime.ExitError": "runtime_exit",
    }


def test_storage_signatures_are_there():
    assert signature_categories("error_code")["ENOSPC"] == "storage"
    assert signature_categories("message")["No space left on device"] == "storage"


def test_every_category_is_one_the_log_reader_knows():
    known = set(get_args(log_records.Category))
    used = {s.category for m in FAILURE_MODES for s in m.signatures if s.category is not None}
    assert used <= known, used - known


def test_no_signature_text_has_two_categories():
    categories: dict[str, set[str]] = {}
    for mode in FAILURE_MODES:
        for signature in mode.signatures:
            if signature.category is not None:
                categories.setdefault(signature.text, set()).add(signature.category)
    assert {text: c for text, c in categories.items() if len(c) > 1} == {}
    for kind in KINDS:
        signature_categories(kind)  # raises ValueError on a conflict


def test_signature_categories_refuses_a_text_with_two_categories():
    def mode(mode_id: str, category: str) -> FailureMode:
        return FailureMode(
            id=mode_id,
            area="invocation",
            title="t",
            symptom="s",
            shows_in=("function logs",),
            cause="c",
            fix="f",
            responder="not_yet",
            fault_type=None,
            action_type=None,
            handover="",
            signatures=(Signature("SomeCode", "error_code", category),),
            sources=("https://docs.aws.amazon.com/lambda/latest/dg/",),
        )

    with pytest.raises(ValueError, match="SomeCode"):
        signature_categories("error_code", (mode("a", "throttled"), mode("b", "kms")))
    assert signature_categories("error_code", (mode("a", "kms"), mode("b", "kms"))) == {"SomeCode": "kms"}


def test_ids_are_unique_kebab_case_and_areas_known():
    ids = [m.id for m in FAILURE_MODES]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", i) for i in ids), ids
    assert {m.area for m in FAILURE_MODES} == set(AREAS)
    assert not set(ids) & set(AREAS)  # the page's anchors stay unique


def test_fixed_modes_name_the_action_for_their_fault_type():
    for mode in FAILURE_MODES:
        if mode.responder == "fixed":
            assert mode.action_type in {a.value for a in ActionType}, mode.id
            assert ACTION_FOR_FAULT[FaultType(mode.fault_type)] == mode.action_type, mode.id
            assert mode.handover == "", mode.id
        else:
            assert mode.action_type is None, mode.id


def test_handed_over_modes_say_what_to_do_and_not_yet_modes_have_no_fault_type():
    fault_types = {f.value for f in FaultType}
    for mode in FAILURE_MODES:
        if mode.responder == "handed_over":
            assert mode.handover.strip() and mode.fault_type in fault_types, mode.id
        elif mode.responder == "not_yet":
            assert mode.fault_type is None and mode.handover == "", mode.id
        else:
            assert mode.fault_type in fault_types, mode.id


def test_every_fault_type_but_unknown_appears():
    expected = {f.value for f in FaultType} - {FaultType.UNKNOWN.value}
    assert expected <= set(modes_by_fault_type()), expected - set(modes_by_fault_type())


def test_every_mode_cites_aws_documentation():
    for mode in FAILURE_MODES:
        assert any(u.startswith("https://docs.aws.amazon.com/") for u in mode.sources), mode.id
        assert all(u.startswith("https://") for u in mode.sources), mode.id
        assert len(set(mode.sources)) == len(mode.sources), mode.id


def test_texts_are_filled_and_their_code_spans_closed():
    for mode in FAILURE_MODES:
        for text in (mode.title, mode.symptom, mode.cause, mode.fix, mode.handover, *mode.shows_in):
            assert text.count("`") % 2 == 0, (mode.id, text)
            assert "|" not in text and "\n" not in text, (mode.id, text)
        assert mode.title and mode.symptom and mode.cause and mode.fix and mode.shows_in, mode.id
        assert all(s.text and s.text == s.text.strip() and "`" not in s.text for s in mode.signatures), mode.id


def test_counts_add_up():
    numbers = counts()
    assert numbers["listed"] == len(FAILURE_MODES)
    assert numbers["listed"] == numbers["fixed"] + numbers["handed_over"] + numbers["not_yet"]
    assert numbers["diagnosed"] == numbers["fixed"] + numbers["handed_over"]
    assert sum(len(v) for v in modes_by_fault_type().values()) == numbers["diagnosed"]


def test_what_the_eval_leaves_to_a_person_by_entry_names_handed_over_entries():
    """The mitigation check lets a handed-over entry's failures remain after REMEDIATED: never a fixed entry's."""
    from incident_responder.catalogue.queries import MODES_BY_ID
    from incident_responder.lab.evaluation import LEFT_TO_A_PERSON_BY_MODE

    assert LEFT_TO_A_PERSON_BY_MODE
    for mode_id, (errors, _) in LEFT_TO_A_PERSON_BY_MODE.items():
        assert MODES_BY_ID[mode_id].responder == "handed_over", mode_id
        assert errors, mode_id
