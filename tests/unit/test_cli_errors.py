"""What a user gets wrong in the first hour ends in one clear line on stderr, never a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from incident_responder.cli import commands as cli
from incident_responder.cli import incidents as cli_incidents

REPO = Path(__file__).parents[2]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket is closed


@pytest.fixture
def no_aws(monkeypatch, tmp_path):
    """An environment with no AWS settings at all (no profile files, no instance metadata)."""
    for key in list(__import__("os").environ):
        if key.startswith(("AWS_", "MCP_", "RESPONDER_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # a refused connection is not worth retrying here


def one_line(code: int, err: str) -> str:
    assert code != 0
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def run_main(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", ["show", "report"])
def test_show_without_a_region(no_aws, capsys, command):
    code, _, err = run_main(capsys, [command, "some-incident"])
    assert "region" in one_line(code, err) and "AWS_REGION" in err


@pytest.mark.parametrize("command", ["show", "report"])
def test_show_without_credentials(no_aws, monkeypatch, capsys, command):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    code, _, err = run_main(capsys, [command, "some-incident"])
    assert "credentials" in one_line(code, err)


@pytest.mark.parametrize(
    "argv",
    [["show", "some-incident"], ["report", "some-incident"], ["lab", "invoke"]],
    ids=["show", "report", "lab invoke"],
)
def test_aws_endpoint_on_a_closed_port(no_aws, monkeypatch, capsys, argv):
    endpoint = f"http://127.0.0.1:{closed_port()}"
    for key, value in {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    code, _, err = run_main(capsys, argv)
    line = one_line(code, err)
    assert line.startswith(f"responder {argv[0]}: ") and endpoint in line and "responder lab up" in line


def test_mcp_call_to_a_closed_port(no_aws, capsys):
    url = f"http://127.0.0.1:{closed_port()}/mcp"
    code, _, err = run_main(capsys, ["mcp", "call", url, "get_lambda_config", "--api-key", "k"])
    assert "unreachable" in one_line(code, err) and url in err


def test_investigate_a_missing_file(no_aws, capsys, tmp_path):
    missing = tmp_path / "alert.json"
    code, _, err = run_main(capsys, ["investigate", str(missing)])
    assert code == 2 and f"{missing}: No such file or directory" in one_line(code, err)


def test_investigate_a_file_that_is_not_utf8(no_aws, capsys, tmp_path):
    alert = tmp_path / "alert.json"
    alert.write_bytes(b'{"function_name": "caf\xe9"}')
    code, _, err = run_main(capsys, ["investigate", str(alert)])
    assert code == 2 and f"{alert}: not UTF-8 text (invalid continuation byte at byte 22)" in one_line(code, err)


def test_an_unexpected_error_is_not_hidden(monkeypatch):
    def broken(args):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(cli_incidents, "_cmd_show", broken)
    with pytest.raises(ZeroDivisionError):
        cli.main(["show", "x"])


@pytest.mark.parametrize("command", [["demo"], ["run", "scenarios/s3-policy-revoked.yaml"], ["lab", "up"]])
def test_lab_commands_without_the_lab_extra(command):
    """`pip install .` leaves out moto: the lab's commands say how to get it, in one line."""
    code = (
        "import sys\n"
        "sys.modules['moto'] = None  # as if the lab extra were not installed\n"
        "from incident_responder.cli.commands import main\n"
        f"sys.exit(main({command!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    line = one_line(out.returncode, out.stderr)
    assert "moto" in line and "[lab]" in line and "make demo" in line


def test_the_lab_modules_named_are_the_lab_extra():
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["lab"]
    distributions = {req.split("[")[0].split("=")[0].split(">")[0].strip().lower() for req in extra}
    provided = {dist.lower() for module in cli.LAB_EXTRA_MODULES for dist in packages_distributions().get(module, [])}
    assert provided == distributions


@pytest.mark.parametrize("name", ["../../x", "a b", "x" * 65, "data-processor\n"])
def test_onboard_a_name_lambda_would_refuse(no_aws, monkeypatch, capsys, name):
    """Defect: `responder onboard ../../x` ended in a traceback; the name is refused before any AWS call."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    code, _, err = run_main(capsys, ["onboard", name])
    line = one_line(code, err)
    assert line.startswith("responder onboard: not a Lambda function name or ARN") and code == 2


def test_eval_a_scenario_file_that_is_not_utf8(no_aws, capsys, tmp_path):
    """Defect: a scenario file that is not UTF-8 ended `responder eval` in a UnicodeDecodeError traceback."""
    (tmp_path / "latin1.yaml").write_bytes("name: caf\xe9\nfaults: [{kind: timeout, seconds: 1}]\n".encode("latin-1"))
    code, _, err = run_main(capsys, ["eval", str(tmp_path)])
    line = one_line(code, err)
    assert "latin1.yaml: not UTF-8 text" in line and "byte 9" in line, line


@pytest.mark.parametrize("command", ["show", "report"])
def test_a_setting_out_of_range_is_one_line_naming_it(no_aws, monkeypatch, capsys, command):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("INCIDENT_TTL_DAYS", "0")
    code, _, err = run_main(capsys, [command, "some-incident"])
    assert "INCIDENT_TTL_DAYS" in one_line(code, err) and code == 2


@pytest.mark.parametrize(
    "argv",
    [["mcp", "serve", "diagnostics"], ["lab", "up"]],
    ids=["mcp serve", "lab up"],
)
@pytest.mark.parametrize("port", ["99999", "0", "http"])
def test_a_port_that_is_no_tcp_port_is_an_argument_error(no_aws, monkeypatch, capsys, argv, port):
    """Defect: `responder mcp serve --port 99999` ended in bind()'s OverflowError traceback."""
    monkeypatch.setenv("MCP_API_KEY", "k")  # the server's key found: the port is what is wrong
    with pytest.raises(SystemExit) as exited:
        cli.main([*argv, "--port", port])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].endswith(f"error: argument --port: not a TCP port (1-65535): {port!r}")


@pytest.mark.parametrize(
    ("name", "cassette", "said"),
    [
        ("../outside", None, "name: Value error, a scenario name is 1-100 letters"),
        ("s", "[" * 100_000, "s.json: not a cassette (nested too deeply)"),
        ("s", '{"format": 1, "model": ' + "9" * 5000 + "}", "s.json: not a cassette (Exceeds the limit"),
    ],
    ids=["name-is-a-path", "deep-cassette", "long-number"],
)
def test_eval_refuses_a_path_for_a_name_and_a_broken_cassette_in_one_line(
    no_aws, capsys, tmp_path, name, cassette, said
):
    """Defect: a scenario's name became a path (replayed from, recorded and reported outside their folders), and a
    cassette nested too deeply or holding a 5,000-digit number ended `responder eval --replay` in a traceback."""
    scenarios, cassettes = tmp_path / "scenarios", tmp_path / "cassettes"
    scenarios.mkdir()
    cassettes.mkdir()
    (scenarios / "s.yaml").write_text(f"name: {name}\nfaults: [{{kind: timeout, seconds: 1}}]\n")
    if cassette is not None:
        (cassettes / "s.json").write_text(cassette)
    code, _, err = run_main(capsys, ["eval", str(scenarios), "--replay", str(cassettes), "--out", str(tmp_path / "o")])
    line = one_line(code, err)
    assert code == 2 and line.startswith("responder eval: ") and said in line, line


@pytest.mark.parametrize("command", ["show", "report"])
def test_aws_region_alone_is_the_region(no_aws, monkeypatch, capsys, command):
    """Defect: every command said "set AWS_REGION", yet botocore reads only AWS_DEFAULT_REGION and the profile's:
    after `export AWS_REGION=eu-west-1` the same message repeated. Now the next thing missing is named."""
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    code, _, err = run_main(capsys, [command, "some-incident"])
    assert "credentials" in one_line(code, err) and "region" not in err


def test_aws_region_wins_over_the_default_region_and_the_profile(no_aws, monkeypatch, tmp_path):
    """As in the AWS CLI (and every other SDK): AWS_REGION overrides AWS_DEFAULT_REGION and the profile's region."""
    from incident_responder.core.aws import AwsClients, new_session
    from incident_responder.mcp_transport.client import SigV4Auth

    config = tmp_path / "config"
    config.write_text("[default]\nregion = ap-south-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    assert AwsClients().region == "ap-south-1"
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    assert AwsClients().region == "us-west-2"
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    assert AwsClients().region == new_session().region_name == "eu-west-1"
    assert SigV4Auth.from_session("http://127.0.0.1:1/mcp").region == "eu-west-1"


PROJECT_ALERT = (
    '{"function_name": "data-processor", "detected_at": "2026-01-01T00:00:00Z", "alert_id": "by-hand",'
    ' "error_type": "KeyError", "error_message": "order_id"}'
)


@pytest.mark.parametrize(
    "servers",
    [
        {"REMEDIATION_MCP_URL": "http://127.0.0.1:9/mcp"},
        {"RESPONDER_MCP_SERVERS": '{"servers": [{"name": "remediation", "url": "http://127.0.0.1:9/mcp"}]}'},
    ],
    ids=["remediation-url-only", "servers-without-diagnostics"],
)
def test_investigate_without_a_diagnostics_server_names_the_variable(no_aws, monkeypatch, capsys, tmp_path, servers):
    """Defect: without DIAGNOSTICS_MCP_URL the investigation ran with no tools, stored NO_EVIDENCE and exited 3
    without naming the variable; it is refused before anything runs or is stored."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for key, value in servers.items():
        monkeypatch.setenv(key, value)
    alert = tmp_path / "alert.json"
    alert.write_text(PROJECT_ALERT)
    code, out, err = run_main(capsys, ["investigate", str(alert)])
    line = one_line(code, err)
    assert code == 2 and out == "" and "DIAGNOSTICS_MCP_URL" in line, line


def test_investigate_an_alarm_back_to_ok(no_aws, monkeypatch, capsys, tmp_path):
    """Defect: an alarm's change into OK (which ingest ignores) ended `responder investigate` in a traceback."""
    import json

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("DIAGNOSTICS_MCP_URL", "http://127.0.0.1:9/mcp")
    event = json.loads((REPO / "events" / "ingest-cloudwatch-alarm.json").read_text())
    alarm = {**json.loads(event["Records"][0]["Sns"]["Message"]), "NewStateValue": "OK", "OldStateValue": "ALARM"}
    alert = tmp_path / "ok.json"
    alert.write_text(json.dumps(alarm))
    code, out, err = run_main(capsys, ["investigate", str(alert)])
    line = one_line(code, err)
    assert code == 2 and out == "" and "changed to OK from ALARM" in line and "nothing to investigate" in line, line


def test_investigate_with_an_openai_model_and_no_key(no_aws, monkeypatch, capsys, tmp_path):
    """Defect: `investigate --model openai:gpt-4o` without OPENAI_API_KEY ended in the OpenAI client's traceback."""
    pytest.importorskip("langchain_openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("DIAGNOSTICS_MCP_URL", "http://127.0.0.1:9/mcp")
    alert = tmp_path / "alert.json"
    alert.write_text(PROJECT_ALERT)
    code, out, err = run_main(capsys, ["investigate", "--model", "openai:gpt-4o", str(alert)])
    line = one_line(code, err)
    assert code == 2 and out == "" and line.startswith("responder investigate: ") and "OPENAI_API_KEY" in line, line


@pytest.mark.parametrize("copies", [1, 3000], ids=["flushed-at-exit", "written-while-running"])
def test_output_piped_into_head(no_aws, tmp_path, copies):
    """Defect: `responder check-alert ... | head` (and `show`) ended in a BrokenPipeError traceback. The reader going
    away stops the command quietly, as with any shell tool: status 141 (128 + SIGPIPE), nothing on stderr."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MCP_", "RESPONDER_"))}
    env["INCIDENT_TOPIC_ARN"] = "arn:aws:sns:us-east-1:123456789012:alerts"  # the stack's account: no AWS call
    ok = str(REPO / "tests" / "fixtures" / "alarms" / "ok-recovery.json")
    proc = subprocess.Popen(
        [sys.executable, "-m", "incident_responder.cli", "check-alert", *[ok] * copies],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # as `head -0` would: the reader has gone before the first line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and "Traceback" not in err and "Exception ignored" not in err, err


def test_doctor_asks_bedrock_in_the_region_aws_region_names(monkeypatch):
    """A shell that exports AWS_REGION alone: doctor's model checks use it too (it said "no Region for Bedrock")."""
    from incident_responder.cli.doctor_bedrock import bedrock_session

    for name in ("AWS_DEFAULT_REGION", "BEDROCK_REGION", "BEDROCK_PROFILE", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert bedrock_session().region_name == "eu-west-1"
    monkeypatch.setenv("BEDROCK_REGION", "us-west-2")  # the model's own Region, when given, still wins
    assert bedrock_session().region_name == "us-west-2"


class _Settings:
    def __init__(self, limit: int, unreserved: int):
        self.answer = {"AccountLimit": {"ConcurrentExecutions": limit, "UnreservedConcurrentExecutions": unreserved}}

    def get(self, service: str):
        return self

    def get_account_settings(self):
        return self.answer


def test_doctor_says_before_a_deployment_whether_the_account_can_spare_the_reserved_concurrency():
    """A new account's quota may be 10 or 50: the stack's reservations would leave Lambda less than the 100 it
    keeps unreserved, and CloudFormation would refuse the stack on its first deployment."""
    from incident_responder.cli.doctor import FAIL, PASS, check_concurrency

    assert check_concurrency(_Settings(1000, 1000)).status == PASS
    small = check_concurrency(_Settings(50, 50))
    assert small.status == FAIL and "reserves 130" in small.detail and "ResponderReservedConcurrency" in small.fix
    assert check_concurrency(_Settings(230, 230)).status == PASS
    assert check_concurrency(_Settings(229, 229)).status == FAIL
    assert check_concurrency(_Settings(50, 50), per_function=1).status == FAIL  # 50 - 13 < 100


def test_doctors_concurrency_figures_are_the_templates():
    from incident_responder.cli.doctor import RESERVED_PER_FUNCTION, RESPONDER_FUNCTIONS
    from incident_responder.lab.template import load_template

    template = load_template()
    assert int(template["Parameters"]["ResponderReservedConcurrency"]["Default"]) == RESERVED_PER_FUNCTION
    functions = [r for r in template["Resources"].values() if r["Type"] == "AWS::Serverless::Function"]
    assert len(functions) == RESPONDER_FUNCTIONS


class _NoSts:
    """Clients whose STS call fails as given."""

    region = "eu-west-1"

    def __init__(self, error: Exception):
        self.error = error

    def get(self, service: str):
        return self

    def get_caller_identity(self):
        raise self.error


def test_doctor_without_working_credentials_says_what_it_could_not_check_and_why():
    from botocore.exceptions import EndpointConnectionError, NoCredentialsError

    from incident_responder.cli.doctor import FAIL, SKIP, run_doctor

    checks = {c.name: c for c in run_doctor("offline", None, clients=_NoSts(NoCredentialsError()))}
    assert checks["credentials"].status == FAIL and "configure a profile" in checks["credentials"].fix
    assert checks["model"].status == SKIP  # said, not silently left out
    offline = _NoSts(EndpointConnectionError(endpoint_url="https://sts.eu-west-1.amazonaws.com/"))
    (credentials, *_) = run_doctor("offline", None, clients=offline)
    assert "network" in credentials.fix and "profile" not in credentials.fix
