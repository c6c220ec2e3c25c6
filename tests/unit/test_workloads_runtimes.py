"""Runtime printers and code reading for the lab's workloads (no lab needed)."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime

import pytest

from chaos.code import broken_package
from chaos.code import code_sha256 as chaos_sha256
from chaos.errors import ChaosError
from incident_responder.lab.account.sources import (
    ORDERS_API_SOURCE,
    QUEUE_CONSUMER_SOURCE,
    SHIPPED_SOURCES,
    code_sha256,
    deployment_package,
)
from incident_responder.lab.runtimes import (
    DeployedCode,
    Frame,
    NodeRuntime,
    PythonRuntime,
    RaisedError,
    Runtime,
    handler_files,
    locate,
    runtime_for,
    split_error,
    thrown_error,
)

MOMENT = datetime(2026, 3, 4, 5, 6, 7, 891000, tzinfo=UTC)
REQUEST = "0f3c7d2a-1111-4222-8333-444455556666"


def _code(package: bytes, version: str = "2") -> DeployedCode:
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        (name,) = archive.namelist()
        return DeployedCode(version, code_sha256(package), name, archive.read(name).decode())


def test_node_error_line_is_the_agreed_invoke_error_shape():
    error = RaisedError(
        "TypeError",
        "x is not a function",
        [Frame("file:///var/task/index.mjs", 7, "Runtime.handler", 11), Frame("<anonymous>", 0, "Array.map")],
    )
    line = NodeRuntime().error(MOMENT, REQUEST, error)
    when, request, level, label, body = line.split("\t")
    assert (when, request, level, label) == ("2026-03-04T05:06:07.891Z", REQUEST, "ERROR", "Invoke Error ")
    payload = json.loads(body)
    assert list(payload) == ["errorType", "errorMessage", "stack"]
    assert payload["stack"] == [
        "TypeError: x is not a function",
        "    at Runtime.handler (file:///var/task/index.mjs:7:11)",
        "    at Array.map (<anonymous>)",
    ]


def test_node_error_keeps_the_sdk_properties_before_the_stack():
    error = RaisedError("AccessDeniedException", "denied", [], {"name": "AccessDeniedException", "$fault": "client"})
    payload = json.loads(NodeRuntime().error(MOMENT, REQUEST, error).split("\t")[4])
    assert list(payload) == ["errorType", "errorMessage", "name", "$fault", "stack"]


def test_python_error_is_a_traceback():
    error = RaisedError("KeyError", "'order_id'", [Frame("/var/task/app.py", 14, "handler", code="process(order)")])
    assert PythonRuntime().error(MOMENT, REQUEST, error) == (
        "[ERROR] KeyError: 'order_id'\nTraceback (most recent call last):\n"
        '  File "/var/task/app.py", line 14, in handler\n    process(order)'
    )


def test_info_lines_per_runtime():
    assert PythonRuntime().info(MOMENT, REQUEST, "hi") == f"[INFO]\t2026-03-04T05:06:07.891Z\t{REQUEST}\thi"
    assert NodeRuntime().info(MOMENT, REQUEST, "hi") == f"2026-03-04T05:06:07.891Z\t{REQUEST}\tINFO\thi"


def test_platform_lines_are_shared():
    assert Runtime.start(REQUEST, "3") == f"START RequestId: {REQUEST} Version: 3"
    assert Runtime.timed_out(MOMENT, REQUEST, 1.0).endswith(f"{REQUEST} Task timed out after 1.00 seconds")
    assert Runtime.killed(REQUEST).endswith("signal: killed\nRuntime.ExitError")
    # Simulated times are floats: 0.06 s is billed 60 ms, not 61.
    report = Runtime.report(REQUEST, 0.06 * 1000, 256, 82, 180.0, timed_out=False)
    assert "Duration: 60.00 ms\tBilled Duration: 60 ms" in report and "Status" not in report
    assert Runtime.report(REQUEST, 1000.0, 128, 90, 1.0, timed_out=True).endswith("\tStatus: timeout")
    # A suppressed init (the Init phase run again in the invocation) has no Init Duration: its time is the duration's.
    assert "Init Duration" not in Runtime.report(REQUEST, 30000.0, 512, 88, None, timed_out=True)


def test_runtime_and_handler_files_follow_the_configuration():
    assert isinstance(runtime_for("nodejs20.x"), NodeRuntime)
    assert isinstance(runtime_for("python3.12"), PythonRuntime)
    assert handler_files("index.handler", "nodejs20.x") == ["index.mjs", "index.js", "index.cjs"]
    assert handler_files("pkg.app.handler", "python3.12") == ["pkg/app.py"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("TypeError: x is not a function", ("TypeError", "x is not a function")),
        ("KeyError: 'order_id'", ("KeyError", "'order_id'")),
        (
            "Cannot read properties of undefined (reading 'id')",
            ("Error", "Cannot read properties of undefined (reading 'id')"),
        ),
        ("total is off: by one", ("Error", "total is off: by one")),
    ],
)
def test_split_error(text, expected):
    assert split_error(text) == expected


def test_locate_finds_line_and_column():
    assert locate("a\n  bb = 1\n", "bb") == (2, 3)
    assert locate("a\n", "zz") == (1, 1)
    assert locate("x\n    await go(\n", r"^\s*await go\($", regex=True) == (2, 5)


def test_shipped_sources_are_recognised_by_their_code_hash():
    package = deployment_package("index.mjs", ORDERS_API_SOURCE)
    assert deployment_package("index.mjs", ORDERS_API_SOURCE) == package  # same bytes every time
    assert SHIPPED_SOURCES[code_sha256(package)] == ("index.mjs", ORDERS_API_SOURCE)
    assert chaos_sha256(package) == code_sha256(package)
    assert len(SHIPPED_SOURCES) == 3


@pytest.mark.parametrize("filename, source", sorted(set(SHIPPED_SOURCES.values())))
def test_shipped_sources_do_not_throw(filename, source):
    runtime = runtime_for("nodejs20.x" if filename.endswith(".mjs") else "python3.12")
    assert thrown_error(DeployedCode("1", "sha", filename, source), runtime) is None


def test_broken_node_package_throws_what_it_was_given():
    code = _code(
        broken_package("nodejs20.x", "index.handler", "TypeError: Cannot read properties of undefined (reading 'id')")
    )
    assert code.filename == "index.mjs"
    error = thrown_error(code, NodeRuntime())
    assert (error.error_type, error.message) == ("TypeError", "Cannot read properties of undefined (reading 'id')")
    line = code.source.splitlines()[error.frames[0].line - 1]
    assert line.strip().startswith("throw new TypeError(")
    assert line[error.frames[0].column - 1 :].startswith("new TypeError")
    assert error.frames[0].file == "file:///var/task/index.mjs"


def test_broken_package_defines_an_error_class_the_runtime_lacks():
    node = _code(broken_package("nodejs20.x", "index.handler", 'OrderRejected: customer "c-1" is "blocked"'))
    assert "class OrderRejected extends Error" in node.source
    error = thrown_error(node, NodeRuntime())
    assert (error.error_type, error.message) == ("OrderRejected", 'customer "c-1" is "blocked"')
    python = _code(broken_package("python3.12", "app.handler", "BatchRejected: poison message"))
    assert python.filename == "app.py" and "class BatchRejected(Exception)" in python.source
    error = thrown_error(python, PythonRuntime())
    assert (error.error_type, error.message) == ("BatchRejected", "poison message")
    builtin = _code(broken_package("python3.12", "app.handler", "KeyError: order_id"))
    assert "class KeyError" not in builtin.source
    compile(builtin.source, "app.py", "exec")  # what chaos deploys is valid Python


def test_an_async_node_handler_awaiting_a_promise_it_never_settles_ends_with_the_runtime_clients_exit_error():
    from chaos.kinds.nodejs_unexpected_exit import unsettled_source
    from incident_responder.account.log_records import parse_event
    from incident_responder.catalogue.queries import failure_mode_of

    source = unsettled_source("handler")
    code = DeployedCode("2", "sha", "index.mjs", source, "index.handler")
    error = thrown_error(code, NodeRuntime())
    assert error is not None and error.error_type == "Runtime.NodeJsExit"
    assert error.message.startswith("The Lambda runtime client detected an unexpected Node.js exit code.")
    # Logged by the runtime client as an Invoke Error, which the log reader reads back and the catalogue names.
    record = parse_event(NodeRuntime().error(MOMENT, REQUEST, error))
    assert (record.error_type, record.handled) == ("Runtime.NodeJsExit", False)
    assert failure_mode_of(record.error_type, record.message) == "nodejs-unexpected-exit"
    # Only an async handler fails (a callback handler's invocation succeeds with a null response); a promise that
    # settles is no exit; Python has no such error.
    callback = source.replace("async (event)", "(event, context, callback)")
    assert thrown_error(DeployedCode("2", "sha", "index.mjs", callback, "index.handler"), NodeRuntime()) is None
    settled = source.replace("(resolve) => {}", "(resolve) => setTimeout(resolve, 10)")
    assert thrown_error(DeployedCode("2", "sha", "index.mjs", settled, "index.handler"), NodeRuntime()) is None
    assert thrown_error(code, PythonRuntime()) is None


def test_an_os_only_runtime_without_a_bootstrap_fails_every_init_as_the_platform_reports_it():
    from incident_responder.account.log_records import parse_event
    from incident_responder.catalogue.queries import failure_mode_of
    from incident_responder.lab.layers import bootstrap_error

    python = DeployedCode("$LATEST", "sha", "app.py", "def handler(e, c):\n    return 1\n", "app.handler")
    moved = DeployedCode("$LATEST", "sha", "app.py", python.source, "app.handler", runtime="provided.al2023")
    error = bootstrap_error(None, moved)  # no layers: nothing to read
    assert (error.error_type, error.message) == (
        "Runtime.InvalidEntrypoint",
        "Couldn't find valid bootstrap(s): [/var/task/bootstrap /opt/bootstrap]",
    )
    assert error.init and error.platform_only
    # A managed runtime, or a package with its bootstrap, starts.
    assert bootstrap_error(None, DeployedCode("1", "sha", "app.py", "", "app.handler", runtime="python3.12")) is None
    with_bootstrap = DeployedCode("1", "sha", None, None, "bootstrap", runtime="provided.al2023", bootstrap=True)
    assert bootstrap_error(None, with_bootstrap) is None
    # The platform's lines: INIT_REPORT names the error type (the log reader's and the catalogue's), and each
    # invocation's line says what it could not find.
    record = parse_event(Runtime.init_report(12.5, "error", error.error_type))
    assert failure_mode_of(record.error_type, record.message) == "invalid-entrypoint"
    assert Runtime.exited(REQUEST, error.message, error.error_type) == (
        f"RequestId: {REQUEST} Error: Couldn't find valid bootstrap(s): [/var/task/bootstrap /opt/bootstrap]\n"
        "Runtime.InvalidEntrypoint"
    )


def test_a_python_handler_naming_a_module_the_package_lacks_fails_init_with_an_import_error():
    from incident_responder.lab.runtimes import module_error

    moved = DeployedCode("$LATEST", "sha", None, None, "service.handler", runtime="python3.12")
    error = module_error(moved, PythonRuntime())
    assert (error.error_type, error.message, error.init) == (
        "Runtime.ImportModuleError",
        "Unable to import module 'service': No module named 'service'",
        True,
    )
    assert module_error(DeployedCode("1", "sha", "app.py", "", "app.handler"), PythonRuntime()) is None
    assert module_error(moved, NodeRuntime()) is None  # the lab emulates no Node.js loader


def test_broken_package_is_deterministic_and_refuses_other_runtimes():
    assert broken_package("nodejs20.x", "index.handler", "Error: x") == broken_package(
        "nodejs20.x", "index.handler", "Error: x"
    )
    assert broken_package("nodejs20.x", "index.handler", "Error: x") != broken_package(
        "nodejs20.x", "index.handler", "Error: y"
    )
    with pytest.raises(ChaosError, match="java21"):
        broken_package("java21", "example.Handler::handleRequest", "Error: x")


def test_queue_consumer_source_names_what_the_emulation_points_at():
    # The emulated traceback cites these lines: they must exist in the deployed source.
    assert locate(QUEUE_CONSUMER_SOURCE, "process(order)")[0] > 1
    assert locate(QUEUE_CONSUMER_SOURCE, "total = sum(")[0] > 1
    assert locate(ORDERS_API_SOURCE, "order.items.reduce")[0] > 1
    assert locate(ORDERS_API_SOURCE, r"^\s*await ddb\.send\($", regex=True)[0] > 1
