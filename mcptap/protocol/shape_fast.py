"""A quick, sound "certainly valid" pre-check of the official wire models
(pure, level 1; used by protocol/shapes.py).

pydantic-core validates a wire model by building it: every accepted params
or result object becomes model instances (about 1 µs for a small
``tools/call``), and nearly every message of a capture is valid. A wire
model's core schema (``Model.__pydantic_core_schema__``) is a tree of a few
node types; :func:`compile_model` turns it into generated Python functions
that only look (type checks, literal sets, bounds, required keys), about a
third of pydantic's cost on the common messages.

The check only ever says "valid" or "not sure", as protocol/schema_fast.py
does for tool schemas: True means the model's own validator (called with
``by_name=False``, as shapes.check calls it) accepts the instance; False
means nothing, and the caller validates with pydantic, whose error messages
the findings quote. A schema with any node or setting outside the subset
below gets no check at all (:func:`compile_model` returns None):

* ``model`` / ``model-fields`` without custom ``__init__``, root models,
  ``post_init`` or strict config; extra keys ``ignore``d, ``allow``ed
  (any value under a string key) or ``forbid``den; a field is looked up by its string validation alias
  (else its name) and is optional exactly when its schema is ``default``;
* ``str``, ``bool``, ``int`` and ``float`` (with ``ge``/``gt``/``le``/``lt``),
  ``literal`` of strings, ``any``, ``none``, ``nullable``, ``default``,
  ``list`` (with ``min_length``/``max_length``), ``dict`` with string keys,
  ``union`` (valid when one member is: pydantic's smart and left-to-right
  modes both accept then), ``definitions`` and ``definition-ref``.

Values are judged only as the exact types ``orjson`` produces (``bool`` is
not an ``int``, a ``str`` subclass is "not sure"); an ``int`` stands for a
``float`` only below 2**53 in magnitude (where the conversion is exact), and
a ``float`` must be finite. A model that keeps extra members needs them under
UTF-8 string keys (pydantic-core converts each; a lone surrogate fails). In a
recursive schema (2026-07-28's ``JSONValue``) every generated function carries
the number of ref'd schemas entered and says "not sure" beyond
``MAX_REF_DEPTH``, below pydantic-core's recursion guard (255 nested
definition-refs). A union of models that each require a distinct
``type`` literal (the content blocks) is checked against the one member its
``type`` names. tests/protocol/test_shape_fast.py holds the check to
pydantic's verdicts on every model the surfaces name.
"""

from __future__ import annotations

from collections.abc import Callable
from types import UnionType
from typing import Any

from mcptap.protocol.shape_gen import Gen, Refuse, helpers
from mcptap.protocol.shape_graph import refs_of as refs_of  # re-exported: tests walk schemas with it

#: ``quick(instance) -> bool``: True only when the model's validator accepts the instance
Quick = Callable[[Any], bool]


def compile_model(model: Any, member: str | None = None, json_keys: bool = False) -> Quick | None:
    """The quick check of a wire model class or a ``X | Y`` union of them (module doc); None when any
    part of its core schema is outside the subset. With ``member`` (one model, e.g. a request's ``params``):
    the check of that member's present non-null value (the model's: it and the other members'; None: no such member).
    ``json_keys``: for values parsed from JSON text only, whose object keys are all ``str`` (not tested again)."""
    made = model_source(model, member, json_keys)
    return None if made is None else load(*made, label=str(getattr(model, "__name__", model)))


def load(source: str, name: str, label: str) -> Quick:
    """The check function ``name`` of a :func:`model_source` source (compiled here; ``label``
    names the model in tracebacks)."""
    ns = helpers()
    exec(compile(source, f"<shape_fast {label}>", "exec"), ns)
    quick: Quick = ns[name]
    return quick


def model_source(model: Any, member: str | None = None, json_keys: bool = False) -> tuple[str, str] | None:
    """:func:`compile_model`'s check as Python source and the name of its function (for
    :func:`load`; the same text in every process, protocol/shape_shipped.py ships it); None
    as there."""
    arms = model.__args__ if isinstance(model, UnionType) else (model,)
    schemas: list[dict[str, Any]] = [s for arm in arms if isinstance(s := getattr(arm, "__pydantic_core_schema__", None), dict)]
    if len(schemas) != len(arms) or (member is not None and len(arms) != 1):
        return None
    gen = Gen(refs_of(schemas, {}), json_keys)
    try:
        names = [gen.function(s) for s in schemas]
        if member is not None:
            top = schemas[0]
            while top.get("type") in ("definitions", "definition-ref"):
                top = top["schema"] if top["type"] == "definitions" else gen.refs[top["schema_ref"]]
            fields = top["schema"]["fields"] if top.get("type") == "model" else {}
            field = next((f for name, f in fields.items() if f.get("validation_alias", name) == member), None)
            if field is None:
                return None
            body = gen.expr(field["schema"], "v")
    except (Refuse, KeyError, TypeError, AttributeError):
        return None
    gen.src += gen.post
    if member is None:
        body = " or ".join(f"{n}(v, 0)" if gen.deep else f"{n}(v)" for n in names)
    gen.src.append(f"def _quick(v{', d=0' if gen.deep and member else ''}):\n    return {body}\n")
    # the source names only the schema's constants (assigned first) and the helpers (shape_gen.helpers)
    # one model or a member that is one function, not recursive: that function is the check (one call less per message)
    only = gen.forwards(body)
    return "".join(gen.consts) + "\n".join(gen.src), only if only is not None else "_quick"
