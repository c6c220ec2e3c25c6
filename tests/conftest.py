"""Shared fixtures: one embedded lab (moto server on loopback) per test session, reset per test."""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from incident_responder.account.baseline import record_baseline
from incident_responder.core.aws import AwsClients
from incident_responder.lab import Lab
from incident_responder.lab.account.data_processor import SampleAccount, create_sample_account

pytest_plugins = ["tests.process_group"]  # nothing a test started outlives the run

CANARY_SECRET = "canary-7f3a9e-do-not-leak"


class _CurrentStdout:
    """Powertools binds its one handler per service to the stream of the first Logger(); bind it to
    whatever stdout is current, so a test's capsys sees the logs and a closed capsys buffer never does."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


def _bind_handler_logs() -> None:
    from aws_lambda_powertools import Logger

    Logger(service="incident-responder", stream=_CurrentStdout())


_bind_handler_logs()


# Test files whose tests are each a unit of work of their own (the corpus run's shards under `make corpus`); every
# other file is one unit, so its module fixtures (a lab, a pipeline) are built once.
SPLIT_FILES = frozenset({"tests/functional/test_evaluation.py"})


def _unit_rank(path: str, slow: bool) -> int:
    return 0 if path in SPLIT_FILES else 1 if slow else 2


def pytest_collection_finish(session: pytest.Session) -> None:
    """A test worker holds every test module, an in-process lab and moto's state: a large heap, which CPython's
    default collector (a young collection every 700 allocations, full ones walking the whole heap) walks again
    and again while moto, botocore and pydantic allocate. Collecting every 50,000 allocations, with what the
    imports made frozen out of it: test_guardrails.py and test_workloads_emulation.py took 38.2 s of CPU, now
    30.9 s. (The lab's own processes hold small heaps: no gain measured there, so they keep the defaults.)"""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 50)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest units first (the corpus shards, then files with slow tests), each file kept together: the
    workers then finish at about the same time."""
    slow_files = {item.nodeid.split("::", 1)[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: _unit_rank(path := item.nodeid.split("::", 1)[0], path in slow_files))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`make test` runs ``-n 3 --dist loadfile``: a file per worker at a time, except :data:`SPLIT_FILES`, in the
    order collected (xdist's own loadgroup tags node ids, which pytest 9 no longer reads, and loadfile would
    put the corpus shards on one worker)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FileScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if path in SPLIT_FILES else path

    config.option.loadscopereorder = False  # keep the collected order: longest first
    return FileScheduling(config, log)


@pytest.fixture(scope="session")
def lab() -> Iterator[Lab]:
    with Lab() as running:
        yield running


@pytest.fixture(scope="session")
def _engine(lab: Lab):
    from incident_responder.lab.engine import LambdaDispatcher

    dispatcher = LambdaDispatcher().install()
    yield dispatcher
    dispatcher.uninstall()


@pytest.fixture
def dispatcher(_engine):
    """The lab's Lambda dispatcher, with no function registered at the start of each test."""
    _engine.functions.clear()
    yield _engine
    _engine.functions.clear()


@pytest.fixture(scope="session")
def _lab_clients(lab: Lab) -> AwsClients:
    # Clients read endpoint and credentials once, at creation: build them under the lab's environment
    # and share them (creating nine boto3 clients per test would dominate the suite's run time).
    saved = {k: os.environ.get(k) for k in lab.env}
    os.environ.update(lab.env)
    try:
        shared = AwsClients()
        for service in ("lambda", "iam", "ec2", "logs", "s3", "sns", "sqs", "dynamodb", "ssm", "sts", "cloudwatch"):
            shared.get(service)
        return shared
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def lab_env(lab: Lab, monkeypatch: pytest.MonkeyPatch, tmp_path) -> dict[str, str]:
    """A fresh, empty lab account, with this process's boto3 pointed at it."""
    from aws_lambda_powertools.utilities import parameters

    lab.reset()
    parameters.clear_caches()  # a cached API key from an earlier account must not leak into this one
    for key, value in lab.env.items():
        monkeypatch.setenv(key, value)
    for key in ("AWS_PROFILE", "MCP_API_KEY", "MCP_API_KEY_PARAMETER", "BASELINE_TABLE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("RESPONDER_CHAOS_STATE_DIR", str(tmp_path / "chaos"))
    return dict(os.environ)


@pytest.fixture
def clients(lab_env, _lab_clients) -> AwsClients:
    return _lab_clients


@pytest.fixture
def artifacts_bucket(clients, monkeypatch: pytest.MonkeyPatch) -> str:
    """The stack's artifacts bucket in the fresh lab account, named by ARTIFACTS_BUCKET (where runbooks live)."""
    name = "artifacts-tests"
    clients.get("s3").create_bucket(Bucket=name)
    monkeypatch.setenv("ARTIFACTS_BUCKET", name)
    return name


@pytest.fixture
def sample(clients: AwsClients) -> SampleAccount:
    """The sample workload, created and onboarded (baseline recorded), with a canary secret in its env."""
    account = create_sample_account(clients, environment={"DB_PASSWORD": CANARY_SECRET})
    record_baseline(clients, account.function_name)
    return account


@asynccontextmanager
async def asgi_client(server, headers: dict[str, str] | None = None):
    """HTTP straight into a FastMCP app (no port), with its session manager running."""
    app = server.streamable_http_app()
    async with server.session_manager.run():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000", headers=headers) as client:
            yield client


# The incident tables of a lifecycle deployed without the stack: the names a lab without the stack uses.
STATE_TABLE = "incident-state"
CONTEXT_TABLE = "incident-context"
LIFECYCLE_ASL = Path(__file__).parents[1] / "statemachine" / "incident_lifecycle.asl.json"


@pytest.fixture
def lifecycle(clients, lab_env, dispatcher):
    """Deploys the real ASL definition into the lab (``deploy(**substitutions)`` -> the state machine ARN), its
    Lambda tasks pointing at names the test registers on the dispatcher."""
    from incident_responder.lab.account.resources import create_table
    from incident_responder.lab.engine import substitute

    create_table(clients, "IncidentStateTable", STATE_TABLE)

    def deploy(**overrides):
        values = {
            "IncidentStateTable": STATE_TABLE,
            "InvestigateFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:investigate",
            "MaxIncidentsPerHour": 20,
            "MaxIncidentsPerFunctionPerHour": 5,
            "IncidentTtlSeconds": 604800,
            "InvestigateTimeoutSeconds": 60,
            "ProposeFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:propose",
            "ProposeTimeoutSeconds": 60,
            "IncidentNewsTopicArn": clients.get("sns").create_topic(Name="incident-news")["TopicArn"],
            # The first half of the lifecycle ends at PROPOSAL_READY here; test_closed_loop.py runs the rest.
            "RemediationMode": "propose_only",
            "ReviewFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:review",
            "ApprovalRequestFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:approval-request",
            "ApprovalTimeoutMinutes": 1,
            "RemediateFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:remediate",
            "VerifyFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:verify",
            "VerifySettleSeconds": 0,
            "OperatorTopicArn": clients.get("sns").create_topic(Name="operators")["TopicArn"],
            **overrides,
        }
        definition = substitute(LIFECYCLE_ASL.read_text(), values)
        name = f"lifecycle-{time.monotonic_ns()}"
        return clients.get("stepfunctions").create_state_machine(
            name=name, definition=definition, roleArn="arn:aws:iam::123456789012:role/sfn"
        )["stateMachineArn"]

    return deploy
