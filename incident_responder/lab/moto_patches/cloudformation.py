"""SERVING the lab: moto's CloudFormation reading a JSON template as JSON."""

from __future__ import annotations

import json
from typing import Any


def _json_templates_as_json() -> None:
    """moto parses every template with PyYAML's pure-Python loader (YAML holds JSON), about 0.3 s of the lab's CPU
    for the stack's 90 KB on each deploy; the lab sends JSON (lab/stack.py). A template that is JSON is read as
    JSON, as CloudFormation reads it; any other goes to moto's own parser."""
    from moto.cloudformation.models import Stack

    if getattr(Stack.parse_template, "_lab_json_first", False):
        return
    parse_yaml = Stack.parse_template

    def parse_template(template: str) -> dict[str, Any]:
        if template.lstrip().startswith("{"):
            try:
                parsed = json.loads(template)
            except ValueError:
                pass
            else:
                if isinstance(parsed, dict):
                    return parsed
        return parse_yaml(template)

    parse_template._lab_json_first = True  # type: ignore[attr-defined]
    Stack.parse_template = staticmethod(parse_template)  # type: ignore[method-assign,assignment]
