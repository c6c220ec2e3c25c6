"""Runbooks in the artifacts bucket: stored with their digest, refused when tampered with, bounded, plain text."""

from __future__ import annotations

import pytest

from incident_responder.memory import runbooks
from incident_responder.memory.runbooks import (
    MAX_BYTES,
    RunbookError,
    RunbookIntegrityError,
    RunbookNotFoundError,
    function_scope,
    mode_scope,
)

BUCKET = "runbook-tests"
TEXT = b"# orders-api\n\n1. Page the payments team.\n2. Check the downstream table's capacity.\n"


@pytest.fixture
def bucket(clients):
    clients.get("s3").create_bucket(Bucket=BUCKET)
    return BUCKET


def test_store_load_list_remove(clients, bucket):
    stored = runbooks.store(clients, bucket, function_scope("orders-api"), TEXT)
    assert stored.digest == runbooks.digest_of(TEXT)
    assert stored.citation == f"runbook:function/orders-api@{stored.digest}"
    head = clients.get("s3").head_object(Bucket=bucket, Key="runbooks/function/orders-api.md")
    assert head["Metadata"]["sha256"] == stored.digest
    assert runbooks.load(clients, bucket, function_scope("orders-api")) == stored
    runbooks.store(clients, bucket, mode_scope("eni-limit-reached"), b"- raise the ENI quota\n")
    assert [str(r.scope) for r in runbooks.list_runbooks(clients, bucket)] == [
        "function/orders-api",
        "mode/eni-limit-reached",
    ]
    runbooks.remove(clients, bucket, function_scope("orders-api"))
    assert runbooks.load(clients, bucket, function_scope("orders-api")) is None
    with pytest.raises(RunbookNotFoundError):
        runbooks.remove(clients, bucket, function_scope("orders-api"))


def test_a_runbook_edited_past_its_digest_is_refused_not_shown(clients, bucket):
    runbooks.store(clients, bucket, function_scope("orders-api"), TEXT)
    s3 = clients.get("s3")
    original = s3.head_object(Bucket=bucket, Key="runbooks/function/orders-api.md")["Metadata"]
    s3.put_object(Bucket=bucket, Key="runbooks/function/orders-api.md", Body=TEXT + b"3. Grant *\n", Metadata=original)
    with pytest.raises(RunbookIntegrityError, match="does not match its recorded sha256"):
        runbooks.load(clients, bucket, function_scope("orders-api"))
    s3.put_object(Bucket=bucket, Key="runbooks/function/orders-api.md", Body=TEXT)  # no digest at all
    with pytest.raises(RunbookIntegrityError):
        runbooks.load(clients, bucket, function_scope("orders-api"))
    found, refused = runbooks.for_incident(clients, bucket, "orders-api")
    assert found == [] and [str(s) for s, _ in refused] == ["function/orders-api"]


def test_a_runbook_over_the_limit_or_not_plain_text_is_refused(clients, bucket):
    scope = function_scope("orders-api")
    runbooks.store(clients, bucket, scope, b"a" * MAX_BYTES)
    with pytest.raises(RunbookError, match="at most 16384 bytes"):
        runbooks.store(clients, bucket, scope, b"a" * (MAX_BYTES + 1))
    with pytest.raises(RunbookError, match="UTF-8"):
        runbooks.store(clients, bucket, scope, b"caf\xe9\n")
    with pytest.raises(RunbookError, match="U\\+0000"):
        runbooks.store(clients, bucket, scope, b"step\x00\n")
    with pytest.raises(RunbookError, match="line 2: .*U\\+001B"):
        runbooks.store(clients, bucket, scope, b"ok\n\x1b[2J clear the screen\n")
    with pytest.raises(RunbookError, match="U\\+202E"):
        runbooks.store(clients, bucket, scope, "1. grant \u202eadmin\n".encode())
    with pytest.raises(RunbookError, match="empty"):
        runbooks.store(clients, bucket, scope, b" \n")
    assert runbooks.store(clients, bucket, scope, b"tabs\tand\nnewlines\n").text == "tabs\tand\nnewlines\n"


def test_scopes_are_function_names_and_catalogue_entries():
    with pytest.raises(RunbookError, match="not a Lambda function name"):
        function_scope("../mode/eni-limit-reached")
    with pytest.raises(RunbookError, match="not a catalogue entry"):
        mode_scope("no-such-mode")
    assert runbooks.scope_of_key("runbooks/function/x/../y.md") is None


def test_an_incident_reads_its_own_function_and_the_named_entries_only(clients, bucket):
    runbooks.store(clients, bucket, function_scope("orders-api"), TEXT)
    runbooks.store(clients, bucket, function_scope("data-processor"), b"1. other team's secret steps\n")
    runbooks.store(clients, bucket, mode_scope("eni-limit-reached"), b"- raise the ENI quota\n")
    found, refused = runbooks.for_incident(clients, bucket, "orders-api", ["eni-limit-reached", "not-an-entry"])
    assert [str(r.scope) for r in found] == ["function/orders-api", "mode/eni-limit-reached"]
    assert refused == []
    assert all("other team" not in r.text for r in found)
