"""INVESTIGATING and VERIFYING: Lambda log events read by their structure, what each event in ``/aws/lambda/<name>`` says.

A function's log group mixes three writers: the function's own code (anything it prints), its runtime
(Python's ``[ERROR] Type: message`` + traceback, Node.js's ``ERROR\\tInvoke Error \\t{json}``), and the
Lambda platform (``START``, ``END``, ``REPORT``, ``Task timed out``, ``Runtime exited``). An event is
classified by the shape its writer gives it, never by a word it contains: a line the code prints
that merely mentions ``AccessDenied`` or ``Task timed out`` is text, not an error. (A line the code
forges in exactly a runtime's shape cannot be told apart here; configuration outranks log text in the
diagnosis for that reason.)

Errors are sorted by where they come from: ``application`` (the function's own code), ``aws_service``
(an error an AWS SDK reports: the service's error code, or the SDK's own connection errors) and
``platform`` (the Lambda service ended the invocation), and by what they mean (``category``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal, cast

from incident_responder.catalogue.queries import signature_categories

Origin = Literal["application", "aws_service", "platform"]
Category = Literal[
    "exception",  # the code raised (a bug, or a runtime error about the code: import, syntax, handler)
    "access_denied",
    "throttled",
    "kms",
    "network",  # could not connect to (or hear back from) an endpoint
    "timeout",  # the function ran out of its configured time
    "out_of_memory",
    "runtime_exit",
    "service_error",  # any other error code a service returned
    "storage",  # ran out of /tmp (ephemeral storage)
]
Runtime = Literal["python", "nodejs"]

# The three tables below come from the failure catalogue (incident_responder/catalogue/): the
# strings AWS prints for each failure, checked against AWS's documentation (docs/failure-catalogue.md).
# Error codes AWS services return, by meaning. Both SDKs name the error after the code: botocore as
# "An error occurred (<code>) when calling the <operation> operation", the JavaScript SDK as the
# error's name (the runtime's errorType).
AWS_ERROR_CATEGORIES: dict[str, Category] = cast(dict[str, Category], signature_categories("error_code"))
# Connection failures the SDKs (and the Node.js network stack under them) report before any service answers.
NETWORK_ERRORS = {text for text, category in signature_categories("network_error").items() if category == "network"}
# Errors the Lambda platform reports for an invocation it ended.
PLATFORM_ERRORS: dict[str, Category] = cast(dict[str, Category], signature_categories("platform_error"))
# The Node.js runtime's labels for an error that ended an invocation (or its initialisation).
NODE_UNHANDLED_LABELS = {"Invoke Error", "Uncaught Exception", "Unhandled Promise Rejection"}
ERROR_LEVELS = {"ERROR", "FATAL", "CRITICAL"}

_ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)"
_REQUEST_ID = r"[0-9A-Za-z-]{8,64}"
_START = re.compile(rf"^START RequestId: (?P<id>{_REQUEST_ID})(?: Version: (?P<version>\S+))?\s*$")
_END = re.compile(rf"^END RequestId: (?P<id>{_REQUEST_ID})\s*$")
_REPORT = re.compile(rf"^REPORT RequestId: (?P<id>{_REQUEST_ID})(?=\t|\s*$)")
_TIMED_OUT = re.compile(
    rf"^(?:{_ISO}[ \t]+(?P<id>{_REQUEST_ID})[ \t]+)?Task timed out after (?P<seconds>\d+(?:\.\d+)?) seconds\s*$"
)
_EXITED = re.compile(rf"^(?:RequestId: (?P<id>{_REQUEST_ID}) )?Error: Runtime exited ")
_RUNTIME_ERROR_TYPE = re.compile(r"Runtime\.\w+")
_NEWLINE = re.compile(r"\r\n|\r|\n")
_PY_UNHANDLED = re.compile(r"^\[ERROR\] (?P<type>[A-Za-z_][\w.]*)(?:: (?P<msg>[^\r\n]*))?(?:\r\n|\r|\n)Traceback ")
_PY_LOGGED = re.compile(rf"^\[(?P<level>[A-Z]+)\]\t(?:{_ISO})\t(?P<id>[^\t]*)\t(?P<text>.*)$", re.S)
_NODE_LOGGED = re.compile(rf"^(?:{_ISO})\t(?P<id>[^\t]*)\t(?P<level>[A-Z]+)\t(?P<text>.*)$", re.S)
_TRACEBACK = "Traceback (most recent call last):"
_PY_EXCEPTION_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?:: (?P<msg>.*))?$")
_JS_ERROR_HEAD = re.compile(r"^(?P<type>[A-Za-z_$][\w$.]*)(?: \[(?P<code>[A-Z_]+)\])?: (?P<msg>.*)$")
_BOTOCORE_MESSAGE = re.compile(r"^An error occurred \((?P<code>[\w.]+)\) when calling the (?P<op>\w+) operation")
_INIT_REPORT = re.compile(r"^INIT_REPORT (?P<fields>Init Duration: .*)$")
_REPORT_FIELD = re.compile(r"^(?P<key>[A-Za-z][A-Za-z ]*): (?P<value>.+?)(?: (?:ms|MB))?$")


@dataclass(frozen=True)
class ErrorRecord:
    """An error one event reports."""

    error_type: str
    message: str
    origin: Origin
    category: Category
    runtime: Runtime | None = None
    handled: bool = False  # the code logged it and carried on (an unhandled one ended the invocation)
    operation: str | None = None  # the AWS API operation, when the SDK names it
    request_id: str | None = None


@dataclass(frozen=True)
class StartRecord:
    request_id: str
    version: str | None


@dataclass(frozen=True)
class EndRecord:
    request_id: str


@dataclass(frozen=True)
class ReportRecord:
    """The platform's ``REPORT`` line: what one invocation used."""

    request_id: str
    duration_ms: float | None = None
    billed_duration_ms: float | None = None
    memory_size_mb: int | None = None
    max_memory_used_mb: int | None = None
    init_duration_ms: float | None = None
    status: str | None = None  # newer runtimes: success, error, timeout
    error_type: str | None = None


LogRecord = ErrorRecord | StartRecord | EndRecord | ReportRecord


# What Python's OSError says when a write finds the file system full (errno 28, ENOSPC).
NO_SPACE = "[Errno 28] No space left on device"


# -- classification of an error type ---------------------------------------------------------------
def aws_error_category(error_type: str | None) -> Category | None:
    """What an AWS error code (or an SDK's connection error) means; None when it is not one."""
    if not error_type:
        return None
    name = error_type.rsplit(".", 1)[-1]
    if error_type in AWS_ERROR_CATEGORIES or name in AWS_ERROR_CATEGORIES:
        return AWS_ERROR_CATEGORIES.get(error_type) or AWS_ERROR_CATEGORIES[name]
    if error_type in NETWORK_ERRORS or name in NETWORK_ERRORS:
        return "network"
    return None


def service_error_code(error_type: str | None, message: str | None) -> str | None:
    """The AWS error code behind an error: botocore's ClientError names it only in its message."""
    if m := _BOTOCORE_MESSAGE.match((message or "").strip()):
        return m.group("code")
    return error_type


def classify_error_type(error_type: str | None) -> tuple[Origin, Category] | None:
    """(origin, category) of an error type seen without its log line (e.g. in an alert); None when unknown."""
    if not error_type:
        return None
    if error_type in PLATFORM_ERRORS:
        return "platform", PLATFORM_ERRORS[error_type]
    category = aws_error_category(error_type)
    return ("aws_service", category) if category else None


def _python_error(type_name: str, message: str, *, handled: bool, request_id: str | None) -> ErrorRecord:
    """A Python exception: botocore's ClientError carries the service's code in its message."""
    message = message.strip()
    if m := _BOTOCORE_MESSAGE.match(message):
        code = m.group("code")
        return ErrorRecord(
            code,
            message,
            "aws_service",
            aws_error_category(code) or "service_error",
            "python",
            handled,
            m.group("op"),
            request_id,
        )
    short = type_name.rsplit(".", 1)[-1]
    if category := aws_error_category(type_name):
        return ErrorRecord(short, message, "aws_service", category, "python", handled, request_id=request_id)
    if type_name.startswith("botocore.") or type_name.startswith("boto3."):
        return ErrorRecord(short, message, "aws_service", "service_error", "python", handled, request_id=request_id)
    if type_name == "OSError" and message.startswith(NO_SPACE):  # ENOSPC: /tmp (ephemeral storage) is full
        return ErrorRecord(type_name, message, "application", "storage", "python", handled, request_id=request_id)
    return ErrorRecord(type_name, message, "application", "exception", "python", handled, request_id=request_id)


def _js_error(
    error_type: str, message: str, details: dict[str, Any], *, handled: bool, request_id: str | None
) -> ErrorRecord:
    """A JavaScript error: the SDK's (named after the service's code, ``$metadata`` attached), a system
    error (``code`` ETIMEDOUT...), or the code's own."""
    code = details.get("code") if isinstance(details.get("code"), str) else None
    if error_type == "Error" and code and code in NETWORK_ERRORS:
        error_type = code
    if error_type in PLATFORM_ERRORS:
        return ErrorRecord(
            error_type, message, "platform", PLATFORM_ERRORS[error_type], "nodejs", handled, request_id=request_id
        )
    if category := aws_error_category(error_type) or aws_error_category(code):
        return ErrorRecord(error_type, message, "aws_service", category, "nodejs", handled, request_id=request_id)
    if "$metadata" in details or "$fault" in details:
        return ErrorRecord(
            error_type, message, "aws_service", "service_error", "nodejs", handled, request_id=request_id
        )
    return ErrorRecord(error_type, message, "application", "exception", "nodejs", handled, request_id=request_id)


# -- one event -------------------------------------------------------------------------------------
def parse_event(message: str) -> LogRecord | None:
    """What one log event reports; None for text (what the code prints that is not an error's shape)."""
    text = message.rstrip("\r\n")
    if text.startswith(("START ", "END ", "REPORT ")):
        return _platform_line(text)
    if text.startswith("INIT_REPORT "):
        return _init_report(text)
    if m := _TIMED_OUT.match(text):
        return ErrorRecord(
            "Sandbox.Timedout",
            f"Task timed out after {m.group('seconds')} seconds",
            "platform",
            "timeout",
            request_id=m.group("id"),
        )
    if (m := _EXITED.match(text)) and (exited := _runtime_exit(text[m.end() :], m.group("id"))):
        return exited
    if m := _PY_UNHANDLED.match(text):
        return _python_error(m.group("type"), m.group("msg") or "", handled=False, request_id=None)
    if m := _PY_LOGGED.match(text):
        return _traceback_in(m.group("text"), request_id=m.group("id") or None)
    if m := _NODE_LOGGED.match(text):
        return _node_line(m.group("level"), m.group("text"), m.group("id"))
    if text.startswith("{"):
        return _json_line(text)
    return None


def _runtime_exit(rest: str, request_id: str | None) -> ErrorRecord | None:
    """``with error: <why>`` (or ``without providing a reason``), then the error type: ``Runtime.ExitError``."""
    lines = [line.strip() for line in _NEWLINE.split(rest.strip())]
    if len(lines) > 2:
        return None
    tokens = " ".join(lines).rsplit(None, 1)
    error_type = "Runtime.ExitError"
    if len(tokens) == 2 and _RUNTIME_ERROR_TYPE.fullmatch(tokens[1]):
        rest, error_type = tokens[0], tokens[1]
    else:
        rest = " ".join(lines)
    if rest.startswith("with error: "):
        why = rest.removeprefix("with error: ")
    elif rest == "without providing a reason":
        why = "no reason given"
    else:
        return None
    killed = "signal: killed" in why or error_type == "Runtime.OutOfMemory"
    return ErrorRecord(
        error_type,
        f"Runtime exited with error: {why}",
        "platform",
        "out_of_memory" if killed else "runtime_exit",
        request_id=request_id,
    )


def _platform_line(text: str) -> LogRecord | None:
    if m := _START.match(text):
        return StartRecord(m.group("id"), m.group("version"))
    if m := _END.match(text):
        return EndRecord(m.group("id"))
    if (m := _REPORT.match(text)) and "\n" not in text:
        fields = {}
        for part in text[m.end() :].split("\t"):
            if f := _REPORT_FIELD.match(part.strip()):
                fields[f.group("key")] = f.group("value")
        return ReportRecord(
            m.group("id"),
            duration_ms=_number(fields.get("Duration")),
            billed_duration_ms=_number(fields.get("Billed Duration")),
            memory_size_mb=_integer(fields.get("Memory Size")),
            max_memory_used_mb=_integer(fields.get("Max Memory Used")),
            init_duration_ms=_number(fields.get("Init Duration")),
            status=fields.get("Status"),
            error_type=fields.get("Error Type"),
        )
    return None


def _init_report(text: str) -> ErrorRecord | None:
    """``INIT_REPORT Init Duration: 1236.04 ms Phase: init Status: error Error Type: Extension.Crash``: the
    platform's line for an Init phase that failed or timed out (fields tab- or space-separated); None when it
    succeeded. The error is the platform's error type; a timeout has none, and is named by the line itself."""
    if not (m := _INIT_REPORT.match(text)) or "\n" in text:
        return None
    fields = dict(re.findall(r"(Init Duration|Phase|Status|Error Type): (\S+)", m.group("fields")))
    status, phase = fields.get("Status"), fields.get("Phase", "init")
    if status not in ("error", "timeout"):
        return None
    message = f"Phase: {phase} Status: {status}"
    error_type = fields.get("Error Type") or "INIT_REPORT"
    # Not the invocation's own time (Sandbox.Timedout): the Init phase's 10 seconds, or an error loading the code.
    category = PLATFORM_ERRORS.get(error_type) or "exception"
    return ErrorRecord(error_type, message, "platform", category)


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _integer(value: str | None) -> int | None:
    number = _number(value)
    return int(number) if number is not None else None


def _traceback_in(text: str, *, request_id: str | None) -> ErrorRecord | None:
    """A Python traceback the code logged (``logger.exception``): its last line names the exception."""
    lines = _NEWLINE.split(text)
    if _TRACEBACK not in lines:
        return None
    tail = lines[lines.index(_TRACEBACK) + 1 :]
    frames = 0
    while frames < len(tail) and tail[frames].startswith((" ", "\t")):
        frames += 1
    if not frames or frames >= len(tail) or not (m := _PY_EXCEPTION_LINE.match(tail[frames])):
        return None
    return _python_error(m.group("type"), m.group("msg") or "", handled=True, request_id=request_id)


def _node_line(level: str, text: str, request_id: str) -> ErrorRecord | None:
    """``<time>\\t<request id>\\t<LEVEL>\\t<text>``: the runtime's own error report, or an Error the code logged."""
    if level not in ERROR_LEVELS:
        return None
    request = request_id if request_id not in ("", "undefined") else None
    label, tab, body = text.partition("\t")
    if tab and label.strip() in NODE_UNHANDLED_LABELS:
        try:
            data = json.loads(body)
        except ValueError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("errorType"), str):
            return None
        return _js_error(data["errorType"], str(data.get("errorMessage", "")), data, handled=False, request_id=request)
    # console.error(err) prints the error's stack: "Name: message" then "    at ..." frames.
    lines = _NEWLINE.split(text)
    if len(lines) > 1 and lines[1].lstrip().startswith("at ") and (m := _JS_ERROR_HEAD.match(lines[0])):
        details = {"code": m.group("code")} if m.group("code") else {}
        if any("$metadata" in line for line in lines):
            details["$metadata"] = True
        return _js_error(m.group("type"), m.group("msg"), details, handled=True, request_id=request)
    return None


def _json_line(text: str) -> LogRecord | None:
    """Lambda's JSON log format: ``platform.*`` records, and error records of either runtime."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    record = _object(data.get("record"))
    kind = data.get("type")
    if kind == "platform.start" and isinstance(record.get("requestId"), str):
        return StartRecord(record["requestId"], record.get("version"))
    if kind == "platform.report" and isinstance(record.get("requestId"), str):
        metrics = _object(record.get("metrics"))
        return ReportRecord(
            record["requestId"],
            duration_ms=_number(str(metrics["durationMs"])) if "durationMs" in metrics else None,
            billed_duration_ms=_number(str(metrics["billedDurationMs"])) if "billedDurationMs" in metrics else None,
            memory_size_mb=_integer(str(metrics["memorySizeMB"])) if "memorySizeMB" in metrics else None,
            max_memory_used_mb=_integer(str(metrics["maxMemoryUsedMB"])) if "maxMemoryUsedMB" in metrics else None,
            init_duration_ms=_number(str(metrics["initDurationMs"])) if "initDurationMs" in metrics else None,
            status=record.get("status"),
            error_type=record.get("errorType"),
        )
    level = data.get("level", data.get("log_level"))
    if level not in ERROR_LEVELS:
        return None
    message_field = data.get("message")
    error = message_field if isinstance(message_field, dict) else data
    if not isinstance(error.get("errorType"), str):
        return None
    request = data.get("requestId") if isinstance(data.get("requestId"), str) else None
    message = str(error.get("errorMessage", ""))
    if "log_level" in data:
        return _python_error(error["errorType"], message, handled=False, request_id=request)
    return _js_error(error["errorType"], message, error, handled=False, request_id=request)


def _object(value: object) -> dict[str, Any]:
    """A JSON object field; empty when the field is missing or is not an object."""
    return value if isinstance(value, dict) else {}
