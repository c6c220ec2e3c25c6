"""INVESTIGATING: a diagnostics tool's result as a model reads it, without the fields it learns nothing from."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer
from pydantic.fields import FieldInfo


class Compact(BaseModel):
    """A tool result's model, serialized without the fields a reader learns nothing from: None, and a value
    equal to the field's default (no error, an empty list, ``handled`` false, ``count`` 1). What is left
    out is the default the schema documents. Fields in ``ALWAYS`` are written whatever their value."""

    ALWAYS: ClassVar[frozenset[str]] = frozenset()

    # No return annotation: with one, pydantic would publish that annotation (any object) as the schema.
    @model_serializer(mode="wrap")
    def _without_unset(self, handler: SerializerFunctionWrapHandler):
        data = handler(self)
        fields = type(self).model_fields
        return {key: value for key, value in data.items() if key in self.ALWAYS or not _unset(fields.get(key), value)}


def _unset(field: FieldInfo | None, value: Any) -> bool:
    if field is None:
        return False
    return value is None or (not field.is_required() and value == field.get_default(call_default_factory=True))
