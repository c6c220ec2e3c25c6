"""Production code (what the Lambda artifacts carry) never imports the lab, chaos or moto."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
LAB_ONLY = ("incident_responder.lab", "chaos", "moto", "samtranslator", "jsonata")


def production_files() -> list[Path]:
    files = [*(REPO / "handlers").glob("*.py"), *(REPO / "mcp").rglob("*.py")]
    files += [p for p in (REPO / "incident_responder").rglob("*.py") if "lab" not in p.relative_to(REPO).parts[1:]]
    return sorted(files)


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def lab_imports(path: Path) -> list[str]:
    return sorted(m for m in imported_modules(path) if m.split(".")[0] in LAB_ONLY or m.startswith(LAB_ONLY))


# The one hand-over: ``responder demo|run|eval|lab|chaos`` runs the lab's parser, imported only then.
HAND_OVER = {"incident_responder/cli/commands.py": ["incident_responder.lab.cli"]}


@pytest.mark.parametrize("path", production_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_production_module_imports_nothing_from_the_lab(path):
    assert lab_imports(path) == HAND_OVER.get(str(path.relative_to(REPO)), [])


def test_the_check_sees_a_lab_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from incident_responder.lab.pipeline import LabPipeline\n    import moto\n")
    assert lab_imports(bad) == ["incident_responder.lab.pipeline", "moto"]


def test_operator_commands_load_no_lab_module():
    """``responder show`` (and its parser) run on production code alone."""
    code = (
        "import sys\n"
        "from incident_responder.cli import commands as cli\n"
        "parser = cli.build_parser()\n"
        "parser.parse_known_args(['show', 'some-incident'])\n"
        "loaded = [m for m in sys.modules if m.startswith(('incident_responder.lab', 'chaos', 'moto'))]\n"
        "print(loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


# -- what a Lambda loads at init (cold start) ---------------------------------------------------------
LIFECYCLE_HANDLERS = [
    "handlers.ingest",
    "handlers.investigate",
    "handlers.propose",
    "handlers.review",
    "handlers.approval",
    "handlers.remediate",
    "handlers.verify",
    "handlers.reconcile",
    "handlers.report",
]


def loaded_after_import(modules: list[str], env: dict[str, str] | None = None) -> set[str]:
    """The top-level names of ``sys.modules`` after importing ``modules`` in a fresh interpreter."""
    code = f"import json, sys\nfor m in {modules!r}: __import__(m)\nprint(json.dumps(sorted(sys.modules)))\n"
    base = {"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120, env={**base, **(env or {})}
    )
    assert out.returncode == 0, out.stderr[-2000:]
    import json

    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_outside_lambda_the_handlers_load_no_xray_sdk_no_mcp_server_and_no_event_parser():
    """No segment can be written outside Lambda (the lab, tests): the X-Ray SDK stays unloaded. The agents are MCP
    clients only; ingest reads SNS itself instead of loading Powertools' models of every event source."""
    loaded = loaded_after_import(LIFECYCLE_HANDLERS)
    assert not {m for m in loaded if m.startswith("aws_xray_sdk")}
    assert not {m for m in loaded if m.startswith(("mcp.server", "starlette", "uvicorn"))}
    assert "aws_lambda_powertools.utilities.parser" not in loaded
    assert "mcp.client.streamable_http" in loaded  # the client side is loaded, by submodule


@pytest.mark.parametrize("handler", ["handlers.ingest", "handlers.report"])
def test_ingest_and_report_load_no_agent_framework(handler):
    """Neither runs a model: ingest starts the lifecycle, report renders what the agents stored (with what it
    imports when it renders: the picture, the evidence paths, the transcripts)."""
    page = [
        "incident_responder.reporting.report",
        "incident_responder.reporting.picture",
        "incident_responder.reporting.transcript",
        "incident_responder.agent.evidence",
    ]
    loaded = loaded_after_import([handler, *page])
    loaded -= {"mcp"}  # registered, its __init__ not run (handlers/)
    assert not {m for m in loaded if m.split(".")[0] in ("langchain_core", "langgraph", "langsmith", "mcp", "httpx")}


# What Lambda gives a function at init, with tracing active (the template's Tracing: Active).
LAMBDA_ENV = {
    "AWS_LAMBDA_FUNCTION_NAME": "incident-responder-function",
    "LAMBDA_TASK_ROOT": str(REPO),
    "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000",
    "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
    "AWS_ACCESS_KEY_ID": "ASIATEST",
    "AWS_SECRET_ACCESS_KEY": "test",
    "RESPONDER_MODEL": "offline",
    "MCP_AUTH": "iam",
    "DIAGNOSTICS_MCP_URL": "https://diagnostics.lambda-url.us-east-1.on.aws/mcp",
    "INCIDENT_CONTEXT_TABLE": "incident-context",
    "BASELINE_TABLE": "baseline",
    "ARTIFACTS_BUCKET": "artifacts",
    "INCIDENT_TTL_DAYS": "7",
    "AGENT_RECURSION_LIMIT": "12",
    "AGENT_TOKEN_CAP": "100000",
}


@pytest.mark.parametrize(
    "module, handler, patched",
    [("handlers.investigate", "handler", ["botocore", "httpx"]), ("handlers.verify", "handler", ["botocore"])],
)
def test_in_lambda_the_handlers_trace_the_calls_they_make(module, handler, patched):
    """In Lambda, Powertools' Tracer records the handler's subsegment and patches what the function calls through,
    not every library the X-Ray SDK knows (whose imports alone cost: requests, sqlite3, httpx where unused)."""
    code = (
        "import json\n"
        f"import {module} as m\n"
        "from aws_xray_sdk.core import patcher\n"
        "print(json.dumps([type(m.tracer).__name__, m.tracer.disabled, sorted(patcher._PATCHED_MODULES)]))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1", **LAMBDA_ENV, "_HANDLER": f"{module}.{handler}"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    import json

    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["Tracer", False, patched]
