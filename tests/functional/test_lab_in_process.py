"""The lab's own calls to moto without a socket (lab/in_process.py): the same application answers them, with the
same answers as over HTTP, and every other process still reaches the lab over HTTP."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from botocore.httpsession import URLLib3Session

from incident_responder.lab import in_process


@pytest.fixture
def over_http(lab):
    """A way to make a call over the lab's socket, as another process would, from this one."""

    def call(function):
        netlocs = [f"{host}:{lab.port}" for host in (lab.host, "localhost")]
        apps = {netloc: in_process._APPS[netloc] for netloc in netlocs}
        for netloc in netlocs:
            in_process.stop_serving_in_process(netloc)
        try:
            return function()
        finally:
            for netloc, app in apps.items():
                in_process.serve_in_process(netloc, app)

    return call


def _answer(response):
    """A parsed answer without what differs between any two calls (request ids, dates)."""
    response = dict(response)
    response.pop("ResponseMetadata", None)
    return response


def test_this_process_calls_the_lab_without_a_socket(clients, monkeypatch):
    sent = []
    monkeypatch.setattr(in_process, "_SEND", lambda session, request: sent.append(request.url))
    clients.get("sqs").create_queue(QueueName="in-process")
    assert "QueueUrls" in clients.get("sqs").list_queues()
    assert sent == []  # never reached urllib3


def test_another_process_still_reaches_the_lab_over_http(clients, lab):
    clients.get("sqs").create_queue(QueueName="seen-from-outside")
    script = "import boto3; print(boto3.client('sqs').list_queues()['QueueUrls'])"
    env = {**lab.env, "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "seen-from-outside" in out.stdout


def test_the_answers_are_those_over_http(clients, over_http):
    """The same calls, in this process and over the socket: the same parsed answers, for each protocol the lab's
    calls use (query XML, JSON, REST JSON, REST XML with binary bodies and metadata)."""
    s3, iam, ddb, lam = (clients.get(s) for s in ("s3", "iam", "dynamodb", "lambda"))
    s3.create_bucket(Bucket="same-answers")
    body = bytes(range(256)) * 4096  # 1 MB, every byte value
    s3.put_object(Bucket="same-answers", Key="a b/ü.bin", Body=body, Metadata={"with_underscore": "kept", "x": "y"})
    iam.create_role(RoleName="same", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}))
    iam.put_role_policy(
        RoleName="same",
        PolicyName="p",
        PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
        ),
    )
    ddb.create_table(
        TableName="same",
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    ddb.put_item(TableName="same", Item={"k": {"S": "1"}, "b": {"B": b"\x00\xff"}, "m": {"M": {"n": {"N": "2"}}}})
    calls = {
        "s3 object": lambda: {
            **_answer(r := s3.get_object(Bucket="same-answers", Key="a b/ü.bin")),
            "Body": r["Body"].read(),
        },
        "s3 list": lambda: _answer(s3.list_objects_v2(Bucket="same-answers")),
        "iam": lambda: _answer(iam.get_role_policy(RoleName="same", PolicyName="p")),
        "dynamodb": lambda: _answer(ddb.get_item(TableName="same", Key={"k": {"S": "1"}})),
        "lambda error": lambda: _error(lambda: lam.get_function_configuration(FunctionName="missing")),
    }
    for name, call in calls.items():
        here, there = call(), over_http(call)
        assert here == there, name
    got = s3.get_object(Bucket="same-answers", Key="a b/ü.bin")
    assert got["Body"].read() == body
    assert got["Metadata"] == {"with_underscore": "kept", "x": "y"}


def _error(call):
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the error is the answer compared
        return type(exc).__name__, getattr(exc, "response", {}).get("Error")
    raise AssertionError("expected an error")


def test_the_labs_seams_see_calls_made_in_process(clients, lab):
    """Injected failures, the count and the trail sit in the application both paths reach."""
    lab.count_calls()
    try:
        clients.get("sqs").create_queue(QueueName="counted")
        assert any(op == "CreateQueue" for (_, _, op) in lab.calls())
    finally:
        lab.count_calls(False)
    lab.fail_requests("ListQueues", service="sqs", times=1)
    with pytest.raises(Exception, match="InjectedFailure"):
        clients.get("sqs").list_queues()
    assert lab.failed_requests[-1:] == ["sqs:ListQueues"]


def test_stopping_every_lab_gives_botocore_its_own_send_back():
    in_process.serve_in_process("127.0.0.1:1", object())
    assert URLLib3Session.send is not in_process._SEND
    in_process.stop_serving_in_process("127.0.0.1:1")
    assert (URLLib3Session.send is in_process._SEND) == (not in_process._APPS)
