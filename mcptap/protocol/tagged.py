"""Faster validation of wire models whose unions are tagged by ``type`` (pure,
level 1; used by protocol/shapes.py).

pydantic validates a plain union in "smart" mode: it tries every member and
keeps the best match. ``CallToolResult.content`` is a list of such a union of
five content block models, so validating a tools/call result costs about
three times what one block model costs. Each member has a ``type`` literal
of its own ("text", "image", …), so the only member that can accept a block
is the one its ``type`` names: a subclass of the model whose top-level union
fields are discriminated by ``type`` accepts exactly the payloads the model
accepts, and only its failures are worded differently.

:func:`faster` returns a validator that tries that subclass and, when it
raises, the model's own validator, whose error (and wording) is the one
shapes.check reports. Models without such a union get their own validator
back. tests/protocol/test_tagged.py holds both to the same verdicts.
"""

from __future__ import annotations

import functools
import types
import typing
from typing import Annotated, Any, Literal, Union, get_args, get_origin


def _tagged_members(tp: Any) -> tuple[Any, ...] | None:
    """The members of a union of models that all carry a ``type`` literal, else None."""
    from pydantic import BaseModel

    if get_origin(tp) not in (Union, types.UnionType):
        return None
    members = get_args(tp)
    values: set[Any] = set()
    for m in members:
        if not (isinstance(m, type) and issubclass(m, BaseModel)):
            return None
        f = m.model_fields.get("type")
        if f is None or f.alias not in (None, "type") or get_origin(f.annotation) is not Literal:
            return None
        tags = set(get_args(f.annotation))
        if tags & values:
            return None                 # two members answer to one tag: smart mode must choose
        values |= tags
    return members


def tagged_variant(model: Any) -> Any:
    """A subclass of ``model`` whose top-level fields that are a union of
    tagged models (or a list of one) are discriminated by ``type``; None when
    it has none or the subclass cannot be built."""
    from pydantic import BaseModel, Field, create_model

    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return None
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        ann = info.annotation
        listed = get_origin(ann) is list
        inner = get_args(ann)[0] if listed else ann
        if _tagged_members(inner) is None:
            continue
        tagged = Annotated[inner, Field(discriminator="type")]  # type: ignore[valid-type]
        fields[name] = (list[tagged] if listed else tagged, info)
    if not fields:
        return None
    try:
        return create_model(f"{model.__name__}Tagged", __base__=model, **fields)
    except Exception:  # noqa: BLE001 - no faster path then, the model's own validator stays
        return None


def faster(model: Any, validate: typing.Callable[[Any], Any]) -> typing.Callable[[Any], Any]:
    """``validate`` (the model's own validating callable), preceded by the
    tagged variant's when ``model`` has one (module doc)."""
    variant = tagged_variant(model)
    if variant is None:
        return validate
    fast = functools.partial(variant.__pydantic_validator__.validate_python, by_name=False)

    def validate_tagged(body: Any) -> Any:
        try:
            return fast(body)
        except Exception:  # noqa: BLE001 - the model's own validator decides and words it
            return validate(body)

    return validate_tagged
