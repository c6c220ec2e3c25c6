"""How each Lambda runtime prints what happens in an invocation, and what a deployed version's code throws.

A printer writes the lines the runtime itself writes to CloudWatch Logs: the function's own log
lines and an unhandled error (Python: ``[ERROR] Type: message`` and a traceback; Node.js:
``ERROR\\tInvoke Error \\t{"errorType":...,"errorMessage":...,"stack":[...]}``). The platform lines
(START, END, REPORT, ``Task timed out``, ``Runtime.ExitError``) are the same for every runtime.

The lab's workloads run the code of the version that is invoked: :func:`read_handler_source` finds
it (the sources the lab ships by their CodeSha256, anything else from moto's Lambda backend when moto
runs in this process), and :func:`thrown_error` reads the error a handler throws before it does
anything (what a broken deployment does).
"""

from __future__ import annotations

import ast
import io
import json
import math
import re
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from incident_responder.core.aws import AwsClients


def timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class Frame:
    """One stack frame: where the error passed (``code`` is the source line, Python prints it)."""

    file: str
    line: int
    function: str | None = None
    column: int = 1
    code: str = ""
    asynchronous: bool = False  # Node.js: "at async fn (...)"


@dataclass(frozen=True)
class RaisedError:
    """An unhandled error as the runtime reports it; ``details`` are the extra own properties Node prints
    (the AWS SDK's ``name``, ``$fault``, ``$metadata``...)."""

    error_type: str
    message: str
    frames: list[Frame] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    init: bool = False  # raised in the Init phase (loading the handler), before any request
    platform_only: bool = False  # the runtime never ran (an extension crashed first): only the platform reports it


class Runtime:
    """A runtime's own log format."""

    name = ""
    task_root = "/var/task"

    def info(self, moment: datetime, request_id: str, text: str) -> str:
        raise NotImplementedError

    def error(self, moment: datetime, request_id: str, error: RaisedError) -> str:
        raise NotImplementedError

    # -- the platform's lines, the same for every runtime ---------------------------------------------
    @staticmethod
    def start(request_id: str, version: str) -> str:
        return f"START RequestId: {request_id} Version: {version}"

    @staticmethod
    def end(request_id: str) -> str:
        return f"END RequestId: {request_id}"

    @staticmethod
    def timed_out(moment: datetime, request_id: str, seconds: float) -> str:
        return f"{timestamp(moment)} {request_id} Task timed out after {seconds:.2f} seconds"

    @staticmethod
    def killed(request_id: str) -> str:
        return Runtime.exited(request_id, "Runtime exited with error: signal: killed")

    @staticmethod
    def exited(request_id: str, why: str, error_type: str = "Runtime.ExitError") -> str:
        """The platform's line when the runtime process ends during an invocation (``why``: ``Runtime exited with
        error: exit status 1``, ``... signal: killed``), or cannot start (``Couldn't find valid bootstrap(s)``,
        Runtime.InvalidEntrypoint)."""
        return f"RequestId: {request_id} Error: {why}\n{error_type}"

    @staticmethod
    def report(
        request_id: str,
        duration_ms: float,
        memory_size: int,
        memory_used: int,
        init_ms: float | None,
        timed_out: bool,
    ) -> str:
        """``init_ms`` None: no Init Duration (a suppressed init's time is in the duration)."""
        status = "\tStatus: timeout" if timed_out else ""
        init = f"\tInit Duration: {init_ms:.2f} ms" if init_ms is not None else ""
        return (
            f"REPORT RequestId: {request_id}\tDuration: {duration_ms:.2f} ms\tBilled Duration: "
            f"{math.ceil(round(duration_ms, 2))} ms\tMemory Size: {memory_size} MB\tMax Memory Used: "
            f"{memory_used} MB" + init + status
        )

    @staticmethod
    def init_report(init_ms: float, status: str, error_type: str | None = None) -> str:
        """The platform's line for an Init phase that did not succeed (``Status: error`` or ``timeout``), as the
        Lambda execution environment page shows it, fields tab-separated as in the ``REPORT`` line."""
        line = f"INIT_REPORT Init Duration: {init_ms:.2f} ms\tPhase: init\tStatus: {status}"
        return line + (f"\tError Type: {error_type}" if error_type else "")


class PythonRuntime(Runtime):
    name = "python"

    def info(self, moment: datetime, request_id: str, text: str) -> str:
        return f"[INFO]\t{timestamp(moment)}\t{request_id}\t{text}"

    def error(self, moment: datetime, request_id: str, error: RaisedError) -> str:
        head = f"[ERROR] {error.error_type}: {error.message}" if error.message else f"[ERROR] {error.error_type}"
        frames = "".join(f'\n  File "{f.file}", line {f.line}, in {f.function}\n    {f.code}' for f in error.frames)
        return f"{head}\nTraceback (most recent call last):{frames}"


class NodeRuntime(Runtime):
    name = "nodejs"
    # Where the runtime's own frames are (Node.js 20 on Lambda), below the handler's.
    RUNTIME_FRAMES = (Frame("file:///var/runtime/index.mjs", 1173, "Runtime.handleOnceNonStreaming", 29),)

    def info(self, moment: datetime, request_id: str, text: str) -> str:
        return f"{timestamp(moment)}\t{request_id}\tINFO\t{text}"

    def error(self, moment: datetime, request_id: str, error: RaisedError) -> str:
        stack = [f"{error.error_type}: {error.message}" if error.message else error.error_type]
        for f in error.frames:
            where = f"{f.file}:{f.line}:{f.column}" if f.line else f.file  # "(<anonymous>)": no position
            prefix = "async " if f.asynchronous else ""
            stack.append(f"    at {prefix}{f.function} ({where})" if f.function else f"    at {prefix}{where}")
        body = {"errorType": error.error_type, "errorMessage": error.message, **error.details, "stack": stack}
        # An error loading the handler is reported as uncaught, outside any request.
        label, request = ("Uncaught Exception", "undefined") if error.init else ("Invoke Error", request_id)
        return f"{timestamp(moment)}\t{request}\tERROR\t{label} \t{json.dumps(body, separators=(',', ':'))}"

    def handler_frame(self, filename: str, source: str | None, pattern: str, *, asynchronous: bool = False) -> Frame:
        line, column = locate(source, pattern, regex=True)
        return Frame(f"file://{self.task_root}/{filename}", line, "Runtime.handler", column, asynchronous=asynchronous)


def runtime_for(runtime: str | None) -> Runtime:
    """The printer for a Lambda ``Runtime`` value (python3.12, nodejs20.x, ...)."""
    return NodeRuntime() if (runtime or "").startswith("nodejs") else PythonRuntime()


def locate(source: str | None, needle: str, *, regex: bool = False) -> tuple[int, int]:
    """(line, column) of the first line of ``source`` containing ``needle`` (a pattern when ``regex``),
    1-based; (1, 1) if absent."""
    for number, text in enumerate((source or "").splitlines(), start=1):
        if regex:
            match = re.search(needle, text)
            # A pattern anchored on indentation still points at the code, not at the spaces before it.
            index = match.start() + len(match.group()) - len(match.group().lstrip()) if match else -1
        else:
            index = text.find(needle)
        if index >= 0:
            return number, index + 1
    return 1, 1


def split_error(text: str, default_type: str = "Error") -> tuple[str, str]:
    """``"TypeError: x is not a function"`` -> ("TypeError", "x is not a function"); no type -> the default."""
    kind, sep, message = text.partition(":")
    if sep and re.fullmatch(r"[A-Za-z_$][\w$.]*", kind.strip()):
        return kind.strip(), message.strip()
    return default_type, text.strip()


# -- the deployed code -----------------------------------------------------------------------------
@dataclass(frozen=True)
class DeployedCode:
    version: str  # the version that runs: "$LATEST" or a published version's number
    code_sha256: str
    filename: str | None  # the handler's file, when the package could be read
    source: str | None
    handler: str | None = None  # the version's own handler setting (a published version keeps the one it had)
    layers: tuple[str, ...] = ()  # the version's layer version ARNs (a published version keeps its layers)
    readable: bool = True  # the handler's file may be read by the runtime's user (others' read bit in the .zip)
    runtime: str | None = None  # the version's own Runtime setting (a published version keeps the one it had)
    bootstrap: bool = False  # the package has an executable file named bootstrap at its root


class UnreadableCode(RuntimeError):
    """The code of the version that runs can be neither recognised nor read from here."""


_NODE_EXTENSIONS = (".mjs", ".js", ".cjs")


def handler_files(handler: str, runtime: str | None) -> list[str]:
    """The files a handler setting (``index.handler``, ``app.handler``) can name in the package."""
    module = handler.rsplit(".", 1)[0]
    if (runtime or "").startswith("nodejs"):
        return [module + ext for ext in _NODE_EXTENSIONS]
    return [module.replace(".", "/") + ".py"]


def _moto_package(clients: AwsClients, function_name: str, version: str, code_sha256: str) -> bytes | None:
    """The package of ``version`` from moto's Lambda backend, when moto serves this account from this process."""
    try:
        from moto.awslambda.utils import get_backend
    except ImportError:
        return None
    account = clients.account_id()
    try:
        function = get_backend(account, clients.region).get_function(
            function_name, None if version == "$LATEST" else version
        )
    except Exception:  # noqa: BLE001 - moto here is not the one serving the account
        return None
    # Only the very package the account reports: another moto's function of the same name is not it.
    if getattr(function, "code_sha_256", None) != code_sha256:
        return None
    return getattr(function, "code_bytes", None) or None


def read_handler_source(
    clients: AwsClients, function_name: str, qualifier: str | None, shipped: dict[str, tuple[str, str]]
) -> DeployedCode:
    """The handler source of the version ``qualifier`` (an alias, a version, or None: $LATEST) routes to."""
    lam = clients.get("lambda")
    kwargs = {"FunctionName": function_name, **({"Qualifier": qualifier} if qualifier else {})}
    config = lam.get_function_configuration(**kwargs)
    version, sha = config.get("Version", "$LATEST"), config.get("CodeSha256", "")
    layers = tuple(layer["Arn"] for layer in config.get("Layers") or [])
    runtime = config.get("Runtime")
    if sha in shipped:  # the lab's own packages: one source file each, no bootstrap
        filename, source = shipped[sha]
        if filename not in handler_files(config.get("Handler") or "", runtime):  # the handler names another file
            return DeployedCode(version, sha, None, None, config.get("Handler"), layers, runtime=runtime)
        return DeployedCode(version, sha, filename, source, config.get("Handler"), layers, runtime=runtime)
    package = _moto_package(clients, function_name, version, sha)
    if package is None:
        raise UnreadableCode(
            f"{function_name} version {version} runs code the lab did not ship (CodeSha256 {sha}) and moto does not "
            "run in this process: invoke the workload from the process that runs the lab"
        )
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        names = set(archive.namelist())
        bootstrap = "bootstrap" in names and bool((archive.getinfo("bootstrap").external_attr >> 16) & 0o111)
        for candidate in handler_files(config.get("Handler", ""), config.get("Runtime")):
            if candidate in names:
                source = archive.read(candidate).decode("utf-8", "replace")
                mode = archive.getinfo(candidate).external_attr >> 16
                readable = not mode or bool(mode & 0o004)  # no mode recorded: the zip tool's default, readable
                handler = config.get("Handler")
                return DeployedCode(version, sha, candidate, source, handler, layers, readable, runtime, bootstrap)
    return DeployedCode(version, sha, None, None, config.get("Handler"), layers, runtime=runtime, bootstrap=bootstrap)


# An async handler awaiting a promise whose executor never calls resolve or reject: with nothing else pending the
# event loop empties before the handler's promise settles, and the runtime client (Node.js 18 and later) fails the
# invocation with its own error, logged as an Invoke Error.
_NODE_NEVER_SETTLES = re.compile(r"\bawait\s+new\s+Promise\(\s*\(?[\w$,\s]*\)?\s*=>\s*\{\s*\}\s*\)")
NODE_EXIT_MESSAGE = (
    "The Lambda runtime client detected an unexpected Node.js exit code. This is most commonly caused by a Promise "
    "that was never settled. For more information, see https://nodejs.org/docs/latest/api/process.html#exit-codes"
)
_NODE_THROW = re.compile(r"""\bthrow\s+new\s+([A-Za-z_$][\w$]*)\(\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')?\s*\)""")
# A handler that returns base64 output undecoded (bytes), and what Python's json module says of bytes.
_PY_EXIT = re.compile(r"^\s*sys\.exit\((\d*)\)")
_PY_RETURNS_BYTES = re.compile(r"^\s*return\s+base64\.b64encode\(")
_BYTES_NOT_SERIALIZABLE = "Object of type bytes is not JSON serializable"
_PY_RAISE = re.compile(r"""^\s*raise\s+([A-Za-z_][\w.]*)\(\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')?\s*\)""")


def _literal(text: str | None) -> str:
    if not text:
        return ""
    if text.startswith('"'):
        return json.loads(text)
    try:
        return str(ast.literal_eval(text))
    except (ValueError, SyntaxError):
        return text[1:-1]


def thrown_error(code: DeployedCode, runtime: Runtime) -> RaisedError | None:
    """The error the handler's code throws outright (``throw new X("...")`` / ``raise X("...")``), if any."""
    if not code.source or not code.filename:
        return None
    pattern = _NODE_THROW if isinstance(runtime, NodeRuntime) else _PY_RAISE
    if isinstance(runtime, NodeRuntime) and _NODE_NEVER_SETTLES.search(code.source) and _async_handler(code):
        return RaisedError("Runtime.NodeJsExit", NODE_EXIT_MESSAGE)
    for number, text in enumerate(code.source.splitlines(), start=1):
        if not isinstance(runtime, NodeRuntime) and (exit_call := _PY_EXIT.search(text)):
            # The code ends the runtime's process: the platform reports it, not the runtime.
            status = int(exit_call.group(1) or 0)
            why = (
                f"Runtime exited with error: exit status {status}"
                if status
                else "Runtime exited without providing a reason"
            )
            return RaisedError("Runtime.ExitError", why, platform_only=True)
        if not isinstance(runtime, NodeRuntime) and _PY_RETURNS_BYTES.search(text):
            # The runtime cannot serialise the handler's return value (json.dumps refuses bytes): no frames of the
            # handler, which returned.
            return RaisedError("Runtime.MarshalError", f"Unable to marshal response: {_BYTES_NOT_SERIALIZABLE}")
        match = pattern.search(text)
        if not match:
            continue
        error_type, message = match.group(1), _literal(match.group(2))
        if isinstance(runtime, NodeRuntime):
            column = text.find("new ", match.start()) + 1
            frames = [
                Frame(f"file://{runtime.task_root}/{code.filename}", number, "Runtime.handler", column),
                *NodeRuntime.RUNTIME_FRAMES,
            ]
        else:
            frames = [Frame(f"{runtime.task_root}/{code.filename}", number, "handler", code=text.strip())]
        return RaisedError(error_type, message, frames)
    return None


def _async_handler(code: DeployedCode) -> bool:
    """The handler the version's setting names is an async function (the runtime client fails only those when the
    event loop empties; a callback handler's invocation then succeeds with a null response)."""
    method = re.escape((code.handler or "").rsplit(".", 1)[-1])
    pattern = rf"\bexport\s+(?:const\s+{method}\s*=\s*async\b|async\s+function\s+{method}\b)"
    return re.search(pattern, code.source or "") is not None


# Where the runtime's own frames are when it loads the handler (Node.js 20 on Lambda).
_NODE_LOAD_FRAMES = (
    Frame("file:///var/runtime/index.mjs", 1151, "UserFunction.js.module.exports.load", 15),
    Frame("file:///var/runtime/index.mjs", 1308, "start", 23, asynchronous=True),
)


def _defines(source: str, method: str, runtime: Runtime) -> bool:
    name = re.escape(method)
    if isinstance(runtime, NodeRuntime):
        pattern = rf"\bexport\s+(?:const|let|var|(?:async\s+)?function)\s+{name}\b|\bexports\.{name}\s*="
    else:
        pattern = rf"^(?:async\s+)?def\s+{name}\s*\("
    return re.search(pattern, source, re.MULTILINE) is not None


def handler_error(code: DeployedCode, runtime: Runtime) -> RaisedError | None:
    """The error the runtime raises loading the handler the version's setting names, when the code has no such
    method (Runtime.HandlerNotFound, with the runtime's own message); None when it has, or the code cannot be read."""
    handler = code.handler
    if not code.source or not handler or "." not in handler:
        return None
    module, method = handler.rsplit(".", 1)
    if _defines(code.source, method, runtime):
        return None
    if isinstance(runtime, NodeRuntime):
        message = f"{handler} is undefined or not exported"
        stack = [*_NODE_LOAD_FRAMES]
        return RaisedError("Runtime.HandlerNotFound", message, stack, init=True)
    return RaisedError("Runtime.HandlerNotFound", f"Handler '{method}' missing on module '{module}'", init=True)


def module_error(code: DeployedCode, runtime: Runtime) -> RaisedError | None:
    """Runtime.ImportModuleError when the package has no file for the module the handler setting names (Python's
    words); None when it has, or for Node.js (whose loader the lab does not emulate)."""
    if isinstance(runtime, NodeRuntime) or code.filename is not None or not code.handler or "." not in code.handler:
        return None
    module = code.handler.rsplit(".", 1)[0]
    top = module.split(".")[0]
    return RaisedError(
        "Runtime.ImportModuleError", f"Unable to import module '{module}': No module named '{top}'", init=True
    )
