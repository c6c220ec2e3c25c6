"""Drive Step Functions ``MockConfigFile`` test cases through the lab's local engine.

The same file Step Functions Local (or LocalStack) reads: ``StateMachines.<name>.TestCases.<case>``
maps Task state names to ``MockedResponses``, whose numbered steps ("0", "1-2") ``Return`` a result
or ``Throw`` an error. Here the mocked states are Lambda tasks answered by the dispatcher in
order; every other state (the DynamoDB transitions) runs for real against the lab.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from incident_responder.lab.engine import LambdaDispatcher


def _steps(response: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """``{"0": a, "1-2": b}`` -> ``[a, b, b]``."""
    out: list[tuple[int, dict[str, Any]]] = []
    for key, step in response.items():
        first, _, last = key.partition("-")
        for i in range(int(first), int(last or first) + 1):
            out.append((i, step))
    return [step for _, step in sorted(out, key=lambda pair: pair[0])]


def _error(name: str, cause: str) -> Exception:
    # The dispatcher reports type(exc).__name__ as the error name, exactly as the mock names it.
    return type(name, (Exception,), {})(cause)


class MockedFunction:
    """A Lambda handler replaying one MockedResponses entry; counts its invocations.

    A Lambda cannot raise a ``States.*`` error, so a mocked ``States.Timeout`` is produced the way
    the real one is: the handler outlives the state's TimeoutSeconds (given as ``timeout_seconds``).
    """

    def __init__(self, steps: list[dict[str, Any]], timeout_seconds: float = 1.0):
        self.steps = steps
        self.timeout_seconds = timeout_seconds
        self.invocations = 0

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        step = self.steps[min(self.invocations, len(self.steps) - 1)]
        self.invocations += 1
        if "Throw" in step and step["Throw"]["Error"] == "States.Timeout":
            time.sleep(self.timeout_seconds + 0.3)
            return {"late": True}
        if "Throw" in step:
            raise _error(step["Throw"]["Error"], step["Throw"].get("Cause", ""))
        returned = step["Return"]
        # A mocked lambda:invoke returns the whole invoke response; the handler returns the payload.
        return returned.get("Payload", returned) if isinstance(returned, dict) else returned


def load_test_case(
    path: Path, state_machine: str, case: str, task_functions: dict[str, str]
) -> dict[str, MockedFunction]:
    """Mocked handlers for one test case, keyed by the function name each mocked Task state calls."""
    config = json.loads(path.read_text())
    mapping = config["StateMachines"][state_machine]["TestCases"][case]
    return {
        task_functions[state]: MockedFunction(_steps(config["MockedResponses"][name]))
        for state, name in mapping.items()
    }


def register_test_case(dispatcher: LambdaDispatcher, mocks: dict[str, MockedFunction]) -> None:
    for function_name, mock in mocks.items():
        dispatcher.register(function_name, mock)
