"""The lab's commands as a new user runs them: `lab up` in one shell, its printed lines followed in another."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

from tests.lab_cli import REPO, RESPONDER, STRAY, alive, clean_env, descendants_of, responder

# Each test starts the `responder` command (and its lab) in a process of its own.
pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LabUp:
    proc: subprocess.Popen
    printed: list[str]
    started_with: subprocess.CompletedProcess | None = None  # `chaos status` as it came up

    def shell(self, base: dict[str, str]) -> dict[str, str]:
        """``base`` after the printed ``unset`` and ``export`` lines, as a user's second shell."""
        env = dict(base)
        for line in self.printed:
            words = shlex.split(line.strip())
            if words[:1] == ["unset"]:
                for key in words[1:]:
                    env.pop(key, None)
            elif words[:1] == ["export"]:
                for pair in words[1:]:
                    key, _, value = pair.partition("=")
                    env[key] = value
        return env

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def start_lab_up(port: int, env: dict[str, str], *extra: str) -> LabUp:
    proc = subprocess.Popen(
        [*RESPONDER, "lab", "up", "--port", str(port), *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    printed: list[str] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        printed.append(line)
        if "stops the lab" in line:
            return LabUp(proc, printed)
    proc.kill()
    pytest.fail(f"lab up never became ready:\n{''.join(printed)}")


@dataclass
class Stopped:
    """A first lab on the port, stopped by SIGTERM with a fault injected: what it left behind."""

    children: list[int]
    chaos_returncode: int
    stop_returncode: int
    alive_after_stop: list[int]


@pytest.fixture(scope="module")
def stopped_lab(tmp_path_factory):
    """A lab on a port, a fault injected, then SIGTERM: the port and shell base the module's lab then reuses."""
    base = clean_env(tmp_path_factory.mktemp("lab-up"))
    port = free_port()
    first = start_lab_up(port, base)
    children = descendants_of(first.proc.pid)
    try:
        chaos = responder("chaos", "iam_revoke", "--target", "s3", env=first.shell(base)).returncode
        stopped = first.stop()
        survivors = [pid for pid in children if alive(pid)]
    finally:
        first.stop()
        for pid in filter(alive, children):  # never leave orphans behind, even when the test fails
            os.kill(pid, signal.SIGKILL)
    return base, port, Stopped(children, chaos, stopped, survivors)


@pytest.fixture(scope="module")
def lab_up(stopped_lab):
    """The next lab on the stopped lab's port (and its state directory), shared by the tests below; the faults
    it reports as it starts are kept for the SIGTERM test (later tests inject their own)."""
    base, port, _ = stopped_lab
    lab = start_lab_up(port, base)
    shell = lab.shell({**base, **STRAY})
    lab.started_with = responder("chaos", "status", env=shell)
    yield lab, shell
    lab.stop()


def test_lab_up_prints_everything_the_other_shell_needs(lab_up):
    lab, shell = lab_up
    for key in (
        "AWS_ENDPOINT_URL",
        "AWS_REGION",
        "AWS_ACCESS_KEY_ID",
        "INCIDENT_STATE_TABLE",
        "INCIDENT_CONTEXT_TABLE",
    ):
        assert shell.get(key), key
    assert shell["DIAGNOSTICS_MCP_URL"].endswith("/mcp") and shell["REMEDIATION_MCP_URL"].endswith("/mcp")
    assert shell["MCP_AUTH"] == "iam"
    for stray in ("AWS_PROFILE", "MCP_API_KEY", "MCP_API_KEY_PARAMETER"):
        assert stray not in shell


def test_lab_invoke_prints_the_incident_id_that_show_follows(lab_up):
    _, shell = lab_up
    assert responder("chaos", "iam_revoke", "--target", "s3", env=shell).returncode == 0
    try:
        invoked = responder("lab", "invoke", env=shell)
        assert invoked.returncode == 0, invoked.stderr
        incident_id = json.loads(invoked.stdout)["incident_id"]
        assert incident_id.startswith("data-processor-")
        assert f"responder show {incident_id}" in invoked.stderr
        # The same alarm again within the grouping window joins that incident: the id printed is its.
        again = responder("lab", "invoke", env=shell)
        assert again.returncode == 0 and json.loads(again.stdout)["incident_id"] == incident_id

        def wait_for(wanted: str) -> dict:
            deadline = time.monotonic() + 90
            while True:
                shown = responder("show", incident_id, "--json", env=shell)
                record = json.loads(shown.stdout) if shown.returncode == 0 else {}
                if record.get("status") == wanted or time.monotonic() > deadline:
                    assert record.get("status") == wanted, shown.stdout + shown.stderr
                    return record
                time.sleep(1)

        # A person decides here: `responder pending`, then `responder approve` with the shell's credentials.
        wait_for("AWAITING_APPROVAL")
        pending = responder("pending", "--json", env=shell)
        assert pending.returncode == 0 and [p["incident_id"] for p in json.loads(pending.stdout)] == [incident_id]
        approved = responder("approve", incident_id, "--yes", env=shell)
        assert approved.returncode == 0, approved.stderr
        record = wait_for("REMEDIATED")
        assert record["approval"]["approval_channel"] == "cli" and record["verification"]["outcome"] == "VERIFIED"
    finally:
        responder("chaos", "restore", env=shell)


def test_investigate_runs_on_the_printed_environment(lab_up, tmp_path):
    _, shell = lab_up
    alert = tmp_path / "alert.json"
    alert.write_text(
        json.dumps(
            {
                "function_name": "data-processor",
                "detected_at": "2026-01-01T00:00:00Z",
                "alert_id": "by-hand",
                "error_type": "ClientError",
                "error_message": "AccessDenied when calling the GetObject operation",
            }
        )
    )
    assert responder("chaos", "iam_revoke", "--target", "s3", env=shell).returncode == 0
    try:
        out = responder("investigate", str(alert), env=shell)
    finally:
        responder("chaos", "restore", env=shell)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert result["outcome"] == "DIAGNOSED" and "permission_loss" in result["diagnosis"]["fault_types"]


def test_mcp_call_signs_for_the_lab_even_with_a_key_exported(lab_up):
    _, shell = lab_up
    with_key = {**shell, "MCP_API_KEY": "a-key-from-another-server"}
    out = responder(
        "mcp", "call", shell["REMEDIATION_MCP_URL"], "get_iam_restore_info", "lambda_name=data-processor", env=with_key
    )
    assert out.returncode == 0, out.stderr
    assert "actions" in json.loads(out.stdout)
    wrong = responder("mcp", "call", shell["DIAGNOSTICS_MCP_URL"], "get_lambda_config", "--api-key", "wrong", env=shell)
    assert wrong.returncode == 1 and "HTTP 403" in wrong.stderr
    assert "Traceback" not in wrong.stderr and len(wrong.stderr.strip().splitlines()) == 1


def test_a_runbook_set_in_the_shell_is_what_get_runbook_answers(lab_up, tmp_path):
    _, shell = lab_up
    runbook = tmp_path / "data-processor.md"
    runbook.write_text("# data-processor\n\n1. Page the data team.\n")
    stored = responder("runbook", "set", "--function", "data-processor", str(runbook), env=shell)
    assert stored.returncode == 0, stored.stderr
    try:
        shown = responder("runbook", "show", "--function", "data-processor", env=shell)
        assert shown.returncode == 0 and shown.stdout == runbook.read_text()
        out = responder(
            "mcp", "call", shell["DIAGNOSTICS_MCP_URL"], "get_runbook", "lambda_name=data-processor", env=shell
        )
        assert out.returncode == 0, out.stderr
        (answered,) = json.loads(out.stdout)["runbooks"]
        assert answered["scope"] == "function/data-processor" and answered["text"] == runbook.read_text()
        assert f"@{answered['digest']}" in shown.stderr
    finally:
        responder("runbook", "remove", "--function", "data-processor", env=shell)
    gone = responder("runbook", "show", "--function", "data-processor", env=shell)
    assert (
        gone.returncode == 1 and gone.stderr.strip() == "responder runbook show: no runbook for function/data-processor"
    )


def test_sigterm_stops_every_child_and_the_next_lab_on_the_port_starts_clean(stopped_lab, lab_up):
    _, _, first = stopped_lab
    assert len(first.children) >= 3  # the fork server, the function URL servers it forked (both MCP servers', ...)
    assert first.chaos_returncode == 0 and first.stop_returncode == 0
    assert first.alive_after_stop == []
    # The next lab on that port (lab_up) started, and sees none of the first one's faults.
    lab, _ = lab_up
    status = lab.started_with
    assert status is not None and status.returncode == 0, status
    assert json.loads(status.stdout)["faults"] == []


def test_lab_up_on_a_busy_port_fails_fast(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = responder("lab", "up", "--port", str(port), env=clean_env(tmp_path), timeout=60)
    assert out.returncode != 0
    assert f"port {port}" in out.stderr and "in use" in out.stderr and "Traceback" not in out.stderr


def test_show_with_a_missing_table(lab_env, monkeypatch, capsys):
    from incident_responder.cli.commands import main

    monkeypatch.setenv("INCIDENT_STATE_TABLE", "no-such-table")
    assert main(["show", "some-incident"]) == 1
    err = capsys.readouterr().err
    assert "ResourceNotFoundException" in err and "INCIDENT_STATE_TABLE=no-such-table" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_missing_table_names_the_variable_that_is_not_set(lab_env, monkeypatch, capsys):
    """Defect: an unset table variable fell back to a default name, and the error listed only the variables that
    were set: never the one to set."""
    from incident_responder.cli.commands import main

    monkeypatch.delenv("INCIDENT_STATE_TABLE", raising=False)
    monkeypatch.setenv("INCIDENT_CONTEXT_TABLE", "my-context")
    assert main(["show", "some-incident"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "INCIDENT_STATE_TABLE is not set (so incident-state was used)" in err, err
    assert "INCIDENT_CONTEXT_TABLE=my-context" in err


@pytest.mark.parametrize(
    "arn, elsewhere",
    [
        ("arn:aws:lambda:us-east-1:210987654321:function:data-processor", "account 210987654321, Region us-east-1"),
        (
            "arn:aws:lambda:eu-west-1:123456789012:function:data-processor:live",
            "account 123456789012, Region eu-west-1",
        ),
    ],
    ids=["account", "region"],
)
def test_onboard_refuses_another_accounts_function_and_records_nothing(clients, sample, capsys, arn, elsewhere):
    """Defect: the ARN was cut to its name, and the local data-processor's baseline was recorded again."""
    from incident_responder.account.baseline import baseline_table_name
    from incident_responder.cli.commands import main

    ddb, key = clients.get("dynamodb"), {"function_name": {"S": sample.function_name}}
    # A mark on the recorded baseline: recording it again (a whole new item) would remove it.
    ddb.update_item(TableName=baseline_table_name(), Key=key, UpdateExpression="SET mark = :m",
                    ExpressionAttributeValues={":m": {"S": "recorded before"}})  # fmt: skip
    before = ddb.get_item(TableName=baseline_table_name(), Key=key)["Item"]
    function = clients.get("lambda").get_function(FunctionName=sample.function_name)["Configuration"]["FunctionArn"]
    tags = clients.get("lambda").list_tags(Resource=function)["Tags"]
    code = main(["onboard", arn])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"responder onboard: {arn} is in {elsewhere}; ")
    assert "credentials reach account 123456789012 in us-east-1" in err
    assert ddb.get_item(TableName=baseline_table_name(), Key=key)["Item"] == before
    assert clients.get("lambda").list_tags(Resource=function)["Tags"] == tags
    # Its own account's ARN onboards as its name does.
    assert main(["onboard", function]) == 0
    assert "mark" not in ddb.get_item(TableName=baseline_table_name(), Key=key)["Item"]


def test_mcp_call_with_a_wrong_key(clients, sample, lab_env):
    from incident_responder.mcp_transport.app import start_server_process

    port = free_port()
    server = start_server_process("diagnostics", port, lab_env)
    try:
        out = responder(
            "mcp", "call", f"http://127.0.0.1:{port}/mcp", "get_lambda_config", "--api-key", "wrong", env=lab_env
        )
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert out.returncode == 1 and "HTTP 401" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("incident_id", "status", "failed"),
    [
        ("i", "PROPOSAL_READY", False),
        ("i", "SUPPRESSED", False),
        (None, "NO_ALERT", False),
        ("i", "ERROR", True),
        ("i", "FAILED", True),
        ("i", "PROPOSAL_FAILED", True),
        ("i", "INVESTIGATING", True),  # the lifecycle never ended
    ],
)
def test_which_ends_of_a_run_are_failures(incident_id, status, failed):
    from incident_responder.lab.pipeline.record import IncidentRecord

    record = IncidentRecord(incident_id=incident_id, status=status, metrics={}, execution={})
    assert record.failed is failed


def test_an_aws_call_the_lab_does_not_implement_is_one_error_not_a_traceback(lab_env, caplog):
    """Defect: a Bedrock model tried against the lab (the shell's AWS_ENDPOINT_URL is the lab's) filled `lab up` with
    moto's NotImplementedError tracebacks, three per call, and the caller got an HTML page. The caller gets an AWS
    error saying where model calls go instead, and the lab logs one line."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError

    runtime = boto3.client("bedrock-runtime", config=Config(retries={"mode": "standard", "max_attempts": 3}))
    with pytest.raises(ClientError) as refused:
        runtime.converse(modelId="some-model", messages=[{"role": "user", "content": [{"text": "hi"}]}])
    error = refused.value.response["Error"]
    assert error["Code"] == "NotImplemented" and "AWS_ENDPOINT_URL_BEDROCK_RUNTIME" in error["Message"], error
    assert refused.value.response["ResponseMetadata"]["RetryAttempts"] == 0
    lines = [r for r in caplog.records if "not implement" in r.getMessage() or r.exc_info]
    assert len(lines) == 1 and lines[0].exc_info is None and "\n" not in lines[0].getMessage(), lines


def test_a_function_url_whose_lab_is_gone_before_it_started_exits(tmp_path):
    """Defect: a function URL process noted its parent only once it had imported its handler: a lab stopped in the
    meantime (Ctrl-C as the demo starts) left it watching init, and running for good."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    url = subprocess.Popen(
        [
            *[sys.executable, "-m", "incident_responder.lab.function_url"],
            *["--handler", "handlers.approval.endpoint_handler", "--function-name", "f", "--port", str(free_port())],
            *["--auth-type", "NONE", "--lab-pid", str(gone.pid)],
        ],
        cwd=REPO,
        env=clean_env(tmp_path),
        stderr=subprocess.DEVNULL,
    )
    try:
        assert url.wait(timeout=60) == 0
    finally:
        if url.poll() is None:
            url.kill()
