"""SERVING the lab: moto's response serializer, finding each attribute's possible names once per kind of object."""

from __future__ import annotations

import threading
from typing import Any


def _possible_keys_once() -> None:
    """moto's serializer looks up every member of an answer's shape on the Python object it answers from, trying the
    member's aliases: for each member of each object, six alias providers are created and asked, and what they
    answer depends only on the object's class, the member's name and its shape (with its parent). An execution's
    history is some 150 events of a 60-member shape: that search was most of GetExecutionHistory's 50 ms and a tenth
    of any call's. Each combination is searched once; the answer is the list moto would make."""
    from moto.core.serialize import AttributePicker, XFormedAttributePicker

    for picker in (AttributePicker, XFormedAttributePicker):
        original = picker.__dict__["get_possible_keys"]
        if not getattr(original, "_lab_once", False):
            picker.get_possible_keys = _once(original)  # type: ignore[method-assign]


def _once(original: Any) -> Any:
    found: dict[tuple[Any, ...], tuple[tuple[str, ...], Any]] = {}
    lock = threading.Lock()

    def get_possible_keys(self: Any, context: Any) -> tuple[str, ...]:
        shape = context.shape
        parent = getattr(shape, "parent", None)
        key = (type(self), tuple(self.alias_providers), type(context.obj), context.key, id(shape), id(parent))
        known = found.get(key)
        if known is None:
            # The shapes are kept with the answer: their ids cannot be reused while the entry stands.
            known = (tuple(original(self, context)), (shape, parent))
            with lock:
                found[key] = known
        return known[0]

    get_possible_keys._lab_once = True  # type: ignore[attr-defined]
    return get_possible_keys
