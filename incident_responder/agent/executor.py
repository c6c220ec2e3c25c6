"""The agent's side of every tool call: arguments checked against the tool's input schema, the incident's scope
enforced, the provider called, and the result checked against the tool's output schema, once (a validator per
schema, built once), before the model sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jsonschema

from incident_responder.account.names import function_name_of
from incident_responder.agent.tools import ToolProvider, ToolSpec


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call produced, as the agent sees it: validated data, or an error to show the model."""

    ok: bool
    data: dict[str, Any] | None = None
    error: str | None = None
    provider_called: bool = True


# A validator per schema object (a tool's schemas live as long as its ToolSpec): built once, not at every call.
_VALIDATORS: dict[int, tuple[dict[str, Any], jsonschema.Draft202012Validator]] = {}


def _validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    kept = _VALIDATORS.get(id(schema))
    if kept is None or kept[0] is not schema:
        if len(_VALIDATORS) > 512:  # the specs of runs long gone
            _VALIDATORS.clear()
        kept = _VALIDATORS[id(schema)] = (schema, jsonschema.Draft202012Validator(schema))
    return kept[1]


def _schema_errors(schema: dict[str, Any] | None, value: Any) -> list[str]:
    if not schema:
        return []
    validator = _validator(schema)
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
        for e in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    ][:5]


class ToolExecutor:
    """Validates, calls and checks tools of one provider."""

    def __init__(
        self,
        provider: ToolProvider,
        specs: list[ToolSpec],
        function_name: str | None = None,
        function_arn: str | None = None,
    ):
        self.provider = provider
        self.specs = {s.name: s for s in specs}
        # The incident's function: a run answers for it alone, so a call about another function (two incidents
        # under way at once, or text in a log naming one) is refused here, before any server sees it.
        self.function_name = function_name
        # A member account's function (unqualified ARN): every call names it by this ARN, so the servers read that
        # account and Region; an ARN of any other account or Region is refused.
        self.function_arn = function_arn

    def _bound(self, arguments: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """The arguments as sent (a member function's name as its ARN), or a refusal."""
        named = arguments.get("lambda_name")
        if refusal := self._other_function(arguments):
            return arguments, refusal
        if not self.function_arn or not isinstance(named, str):
            return arguments, None
        if named.startswith("arn:") and ":".join(named.split(":")[:7]) != self.function_arn:
            return arguments, (
                f"this incident is about {self.function_arn}; {named[:140]} is in another account or Region, "
                "which tools may not be called for"
            )
        qualifier = named.split(":")[7:8] if named.startswith("arn:") else []
        return {**arguments, "lambda_name": ":".join([self.function_arn, *qualifier])}, None

    def _other_function(self, arguments: dict[str, Any]) -> str | None:
        named = arguments.get("lambda_name")
        if self.function_name is None or not isinstance(named, str):
            return None
        try:
            other = function_name_of(named)
        except ValueError:
            return None  # the server's own validation answers a malformed name
        if other == self.function_name:
            return None
        return f"this incident is about {self.function_name}; tools may be called for it only, not for {other[:64]}"

    async def run(self, name: str, arguments: Any) -> ToolOutcome:
        spec = self.specs.get(name)
        if spec is None:
            return ToolOutcome(
                False, error=f"unknown tool {name!r}; available: {', '.join(sorted(self.specs))}", provider_called=False
            )
        if not isinstance(arguments, dict):
            return ToolOutcome(False, error="arguments must be a JSON object", provider_called=False)
        if problems := _schema_errors(spec.input_schema, arguments):
            return ToolOutcome(
                False, error=f"invalid arguments for {name}: {'; '.join(problems)}", provider_called=False
            )
        arguments, refusal = self._bound(arguments)
        if refusal:
            return ToolOutcome(False, error=f"{name}: {refusal}", provider_called=False)
        raw = await self.provider.call_tool(name, arguments)
        if raw.is_error:
            return ToolOutcome(False, error=f"{name} failed: {raw.text or 'tool error'}"[:2000])
        if not raw.structured:
            return ToolOutcome(False, error=f"{name} returned an empty response")
        if problems := _schema_errors(spec.output_schema, raw.structured):
            return ToolOutcome(
                False, error=f"{name} returned a response that does not match its schema: {'; '.join(problems)}"
            )
        return ToolOutcome(True, data=raw.structured)
