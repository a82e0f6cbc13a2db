"""Builds protocol/shape_shipped.py's document (pure, level 1; for
``scripts/gen_shape_table.py`` and the test that holds the shipped file to it).
Imports pydantic and every era of mcp-types: never on ``check``'s path."""

from __future__ import annotations

from typing import Any

from mcptap.model import Direction, Kind
from mcptap.protocol import shape_fast, shape_shipped, shapes

#: surface -> (direction, kind) of its messages (shapes._surface's inverse)
KEYS = {"CLIENT_REQUESTS": (Direction.C2S, Kind.REQUEST), "SERVER_REQUESTS": (Direction.S2C, Kind.REQUEST),
        "CLIENT_NOTIFICATIONS": (Direction.C2S, Kind.NOTIFICATION), "SERVER_NOTIFICATIONS": (Direction.S2C, Kind.NOTIFICATION),
        "CLIENT_RESULTS": (Direction.C2S, Kind.RESPONSE), "SERVER_RESULTS": (Direction.S2C, Kind.RESPONSE)}


def document() -> dict[str, Any] | None:
    """The shipped document for the installed inputs (shape_shipped.inputs):
    ``{"inputs", "generator", "models": {arms: {variant: [source, function] | None}},
    "empty": {surface: {"METHOD REVISION": [errors of None, errors of {}]}}}``;
    None when the surface table does not fit the installed mcp-types."""
    shapes.available()
    table = shapes._shipped_table()
    if table is None:
        return None
    models: dict[str, Any] = {}
    empty: dict[str, Any] = {}
    for name, rows in sorted(table.items()):
        kind = KEYS[name][1]
        empty[name] = {}
        for key, arms in sorted(rows.items()):
            model = shapes._from_table(name, key)
            made = models.setdefault(" | ".join(arms), {})
            for variant, (member, json_keys) in sorted(shape_shipped.VARIANTS.items()):
                if variant not in made:
                    src = shape_fast.model_source(model, member, json_keys)
                    made[variant] = list(src) if src is not None else None
            method = key.rsplit(" ", 1)[0]
            quick = shape_fast.compile_model(model)
            validate = shapes._validator(model)
            absent_or_empty: tuple[Any, Any] = (None, {})
            empty[name][key] = [list(shapes.verdict(kind, method, quick, validate, payload)) for payload in absent_or_empty]
    return {"inputs": shape_shipped.inputs(), "generator": shape_shipped.generator(), "models": models, "empty": empty}

