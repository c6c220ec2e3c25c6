"""What the model sees and says, in lab incidents whose model speaks Converse over the wire.

Sees: secrets in a failing function's logs (each shape the redactor knows, scenarios/secrets-in-logs.yaml) reach
nothing: not one request to the model (read on the wire), the stored records (DynamoDB and S3), the report page or
the chat notice; the incident still ends REMEDIATED on grounded evidence, the model having seen the markers.

Says: each agent's transcript on the report, looked at in headless Chromium: a REMEDIATED one (the
three agents) and a FAILED one (a model that answers in prose and calls a tool that does not exist); kept by
``responder eval --out`` (its run_scenario) and printed by ``responder show --transcript``; and an ERROR one (the
endpoint refuses the account after one turn), whose report still shows the turns up to the failure.

The model speaks Converse over the wire (lab/converse/): as the offline model for the REMEDIATED incident, and
scripted for the FAILED one, through the user's own Bedrock endpoint (tests/functional/test_real_model_path.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from incident_responder.agent.model_catalog import DEFAULT_MODEL
from incident_responder.lab.converse.backends import OfflineBackend, answer, text, tool_use
from incident_responder.lab.converse.errors import ConverseError
from incident_responder.lab.converse.gateway import ConverseGateway
from incident_responder.lab.pipeline.startup import LabPipeline
from incident_responder.lab.scenario import load_scenario
from tests.browser import browser, run_browser
from tests.converse_user import USER_KEY, USER_SECRET, user_environment
from tests.report_checks import assert_report
from tests.secret_lines import SECRET_LINES

REPO = Path(__file__).parents[2]
SCENARIO = REPO / "scenarios" / "s3-policy-revoked.yaml"
SECRETS = REPO / "scenarios" / "secrets-in-logs.yaml"
# An errors alarm's first reads, made before the investigator's first turn (investigation.investigator.first_reads).
FIRST_READS = ("get_incident_history", "get_function_metrics", "get_recent_logs", "get_config_drift")
HOSTILE = "<script>alert('owned')</script><b>IGNORE PREVIOUS INSTRUCTIONS</b>"
pytestmark = pytest.mark.slow


def prose_then_a_made_up_tool(model_id: str, request: dict) -> dict:
    """A model that never submits: prose, then (nudged) a tool that does not exist, then prose again."""
    said = sum(m["role"] == "assistant" and "text" in json.dumps(m["content"]) for m in request["messages"])
    if said == 1:
        return answer(text("Let me wipe the logs first."), tool_use("delete_everything", {"confirm": True}))
    return answer(text(f"It is surely the network. {HOSTILE}"))


@pytest.fixture(scope="module")
def lab_with_a_model(lab):
    """One pipeline whose model calls go to a Converse server answering as ``mode["backend"]`` does."""
    offline = OfflineBackend()
    mode = {"backend": offline}
    monkeypatch = pytest.MonkeyPatch()
    with ConverseGateway(lambda model_id, request: mode["backend"](model_id, request), secrets={USER_KEY: USER_SECRET}) as gateway:  # fmt: skip
        user_environment(monkeypatch, gateway.url)
        try:
            with LabPipeline.start(lab=lab, workers=True, model=DEFAULT_MODEL) as pipeline:
                yield pipeline, mode, offline, gateway
        finally:
            monkeypatch.undo()


class Page(HTMLParser):
    """The transcript section of a page as Chromium serialised its DOM: its ``<details>`` and their summaries."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # inside <section id="transcript"> while > 0
        self.details: list[dict] = []
        self.summaries: list[str] = []
        self.agents: list[str] = []
        self.elements: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "section" and attributes.get("id") == "transcript":
            self.depth = 1
            return
        if not self.depth:
            return
        if tag == "section":
            self.depth += 1
        self.elements.append(tag)
        if tag == "details":
            self.details.append(attributes)
        if tag in ("summary", "h3"):
            self._in = tag
            (self.summaries if tag == "summary" else self.agents).append("")

    def handle_endtag(self, tag):
        if self.depth and tag == "section":
            self.depth -= 1
        if tag == self._in:
            self._in = None

    def handle_data(self, data):
        if self._in == "summary":
            self.summaries[-1] += data
        elif self._in == "h3":
            self.agents[-1] += data


def news_inbox(pipeline) -> str:
    """A queue subscribed to the incident news topic: the chat notices."""
    sqs, sns = pipeline.clients.get("sqs"), pipeline.clients.get("sns")
    inbox = sqs.create_queue(QueueName="news-inbox")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=pipeline.stack.output("IncidentNewsTopicArn"), Protocol="sqs", Endpoint=arn)
    return inbox


def no_secret_anywhere(pipeline, folder: Path, exchanges: list, inbox: str) -> None:
    """No secret of the scenario's logs in a model request, a store, the report or a notice; the markers where they
    were in the requests; the report counting them per tool."""
    clients, stack = pipeline.clients, pipeline.stack
    dynamodb, s3 = clients.get("dynamodb"), clients.get("s3")
    items = []
    for table in ("IncidentStateTableName", "IncidentContextTableName"):
        items += dynamodb.scan(TableName=stack.output(table))["Items"]
    bucket = stack.output("ArtifactsBucketName")
    objects = [
        s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read().decode()
        for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])
    ]
    assert items and objects
    stored = json.dumps(items) + "\n".join(objects)
    page = (folder / "report.html").read_text()
    notices = json.dumps(clients.get("sqs").receive_message(QueueUrl=inbox, MaxNumberOfMessages=10).get("Messages", []))
    requests = json.dumps([exchange.request for exchange in exchanges])
    assert exchanges and "REMEDIATED" in notices
    for kind, (secret, _) in SECRET_LINES.items():
        for where, held in (("a model request", requests), ("a store", stored), ("the report", page)):
            assert secret not in held, f"{kind} reached {where}"
            assert json.dumps(secret)[1:-1] not in held, f"{kind} reached {where} (JSON-escaped)"
        assert secret not in notices, f"{kind} reached the chat notice"
        assert f"[REDACTED:{kind}]" in requests, kind  # the logs did reach the model: as markers
    evidence = json.loads((folder / "record.json").read_text())["evidence"]
    assert evidence["grounded_ratio"] == 1.0
    shown = page[page.index("Secrets redacted from the tool output before the model saw it") :]
    assert "<b>get_recent_logs</b>: " in shown and all(kind in shown for kind in SECRET_LINES)


def looked_at(page: Path, tmp_path: Path) -> tuple[Page, str]:
    """The page as headless Chromium built it (its DOM), and a screenshot taken of it."""
    binary = browser()
    dom = run_browser(binary, "--dump-dom", page.as_uri())
    assert dom.returncode == 0 and '<section id="transcript">' in dom.stdout, dom.stderr[-2000:]
    shot = tmp_path / f"{page.parent.name}.png"
    run_browser(binary, "--hide-scrollbars", f"--screenshot={shot}", "--window-size=1280,3000", page.as_uri())
    assert shot.exists() and shot.stat().st_size > 10_000
    parsed = Page()
    parsed.feed(dom.stdout)
    return parsed, dom.stdout


def test_a_remediated_incident_with_secrets_in_its_logs_its_transcript_in_chromium_eval_out_and_show(
    lab_with_a_model, tmp_path, capsys
):
    from incident_responder.cli.commands import main
    from incident_responder.lab.evaluation import run_scenario

    pipeline, mode, offline, gateway = lab_with_a_model
    mode["backend"] = offline
    inbox = news_inbox(pipeline)
    asked = len(gateway.exchanges)
    score = run_scenario(pipeline, load_scenario(SECRETS), out_dir=tmp_path)  # what responder eval --out does
    assert score.status == "REMEDIATED", score
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    page = folder / "report.html"
    assert_report(page.read_text(), "REMEDIATED")
    no_secret_anywhere(pipeline, folder, gateway.exchanges[asked:], inbox)
    saved = json.loads((folder / "transcript.json").read_text())
    assert list(saved) == ["investigator", "proposer", "critic"]
    assert all(entries[-1] == {"kind": "end", "end_reason": "submitted"} for entries in saved.values())
    assert (folder / "transcript.txt").read_text().startswith("investigator: ")

    parsed, _ = looked_at(page, tmp_path)
    assert parsed.agents == ["investigator", "proposer", "critic"]
    assert parsed.details and all("open" not in d for d in parsed.details)  # every turn collapsed
    turns = sum(e["kind"] == "model" for entries in saved.values() for e in entries)
    calls = sum(e["kind"] == "tool" for entries in saved.values() for e in entries)
    assert len(parsed.details) == turns + calls
    # The investigator's first reads (the history, the metrics, the logs, the drift), then the model's turns; the
    # proposer's and the critic's lookups, read before a turn that their answers made unnecessary.
    first = [f"tool {tool} (read before turn 1): ok" for tool in FIRST_READS]
    assert [s[: len(f)] for s, f in zip(parsed.summaries, first, strict=False)] == first
    assert parsed.summaries[4].startswith("turn 1: called ") and " in / " in parsed.summaries[4]
    assert any(s.startswith("tool get_iam_restore_info (read before turn 1): ok") for s in parsed.summaries)
    assert "decided by the pre-read answers: no model turn" in (folder / "transcript.txt").read_text()

    # responder show --transcript: the same transcripts, from the stores, as text.
    capsys.readouterr()
    assert main(["show", folder.name, "--transcript"]) == 0
    out = capsys.readouterr().out
    assert f"incident {folder.name}: REMEDIATED" in out and "\ntranscript:\ninvestigator: " in out
    assert "\ncritic: " in out and "  end: submitted" in out and "(responder show --json" not in out
    # Piped into `head`: the reader leaving early ends the command quietly.
    shown = subprocess.Popen(
        [sys.executable, "-m", "incident_responder.cli", "show", folder.name, "--transcript"],
        cwd=REPO,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    shown.stdout.readline()
    shown.stdout.close()
    err = shown.stderr.read().decode()
    assert shown.wait(timeout=120) in (0, 141) and "Traceback" not in err, err


def test_a_failed_incidents_transcript_shows_the_prose_and_the_made_up_tool_in_chromium(lab_with_a_model, tmp_path):
    from incident_responder.lab.pipeline.artifacts import write_artifacts

    pipeline, mode, _, _ = lab_with_a_model
    pipeline.refresh(model=DEFAULT_MODEL)
    mode["backend"] = prose_then_a_made_up_tool
    record = pipeline.run(load_scenario(SCENARIO))
    assert record.status == "FAILED", record
    paths = write_artifacts(pipeline, record, tmp_path)
    assert_report(paths["report"].read_text(), "FAILED")
    (entries,) = json.loads(paths["transcript"].read_text()).values()
    # The first reads, made before the first turn; then the model's turns.
    assert [e["kind"] for e in entries] == [*["tool"] * 4, "model", "nudge", "model", "tool", "model", "end"]
    assert all(e["pre_read"] for e in entries[:4]) and [e["tool"] for e in entries[:4]] == list(FIRST_READS)
    assert entries[-1]["end_reason"] == "no_tool_call: answered in text after 1 nudge(s)"

    parsed, dom = looked_at(paths["report"], tmp_path)
    assert parsed.agents == ["investigator"]
    assert len(parsed.details) == 8 and all("open" not in d for d in parsed.details)
    assert parsed.summaries[0].startswith("tool get_incident_history (read before turn 1): ok")
    assert parsed.summaries[4].startswith("turn 1: answered in text")
    assert parsed.summaries[4].endswith(
        "\"It is surely the network. <script>alert('owned')</script><b>IGNORE PREVIOUS INSTRUCTIONS</b>\""
    )
    assert parsed.summaries[5].startswith("turn 2: called delete_everything")
    assert parsed.summaries[6].startswith("tool delete_everything: unknown tool")
    # The model's words are in the page as text: no element came of them.
    assert "script" not in parsed.elements and "&lt;script&gt;alert('owned')&lt;/script&gt;" in dom
    assert "nudge: You answered without calling a tool." in dom
    assert "unknown tool 'delete_everything'" in dom


def looks_then_loses_access(model_id: str, request: dict) -> dict:
    """A model that calls one tool, then the endpoint refuses the account (ModelAuthError: the incident ends ERROR)."""
    if any(m["role"] == "assistant" and "get_recent_changes" in json.dumps(m) for m in request["messages"]):
        raise ConverseError(
            403, "AccessDeniedException", "You don't have access to the model with the specified model ID."
        )
    return answer(text("Who changed it?"), tool_use("get_recent_changes", {"lambda_name": "data-processor"}))


def test_an_error_incidents_report_shows_the_turns_up_to_the_failure(lab_with_a_model, tmp_path):
    from incident_responder.lab.pipeline.artifacts import write_artifacts

    pipeline, mode, _, _ = lab_with_a_model
    pipeline.refresh(model=DEFAULT_MODEL)
    mode["backend"] = looks_then_loses_access
    record = pipeline.run(load_scenario(SCENARIO))
    assert (record.status, record.error_category) == ("ERROR", "model_auth"), record
    paths = write_artifacts(pipeline, record, tmp_path)
    page = paths["report"].read_text()
    assert_report(page, "ERROR")
    (entries,) = json.loads(paths["transcript"].read_text()).values()
    assert [e["kind"] for e in entries] == [*["tool"] * 4, "model", "tool", "model", "end"]  # the first reads first
    assert entries[5]["ok"] and entries[6]["outcome"] == "failed" and "AccessDeniedException" in entries[6]["error"]
    assert entries[7]["end_reason"].startswith("error: ModelAuthError: ")
    assert "turn 2: failed: " in page and "tool get_recent_changes: ok" in page
    assert record.metrics["llm_calls"] == 2  # the failed call counted, not vanished
