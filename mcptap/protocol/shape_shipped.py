"""The wire models' quick checks and payload-less verdicts, shipped (pure, level 1;
used by protocol/shapes.py).

Generating a quick check (protocol/shape_fast.py) needs the model's core schema:
pydantic and the model's era of mcp-types imported, about 0.2 s of a ``check``'s
start, then pydantic validates only the messages the quick check is not sure of
(rare). ``data/shape-quick.json`` (written by ``scripts/gen_shape_table.py``,
built by protocol/shape_ship_gen.py) holds, per wire model of the surface table,
the source :func:`shape_fast.model_source` gives for each variant (:data:`VARIANTS`),
and per (surface, ``"METHOD REVISION"``) the verdicts (error messages, ``[]``
when valid) ``shapes.check`` gives an absent (``None``) and an empty (``{}``)
payload. It is used only when it was written from the same inputs
(:func:`inputs`: the generating modules' source, mcp-types' and pydantic's
version files, the Python version); else shapes.py generates them as before, so
a stale or missing file costs time, never a verdict.
tests/protocol/test_shape_shipped.py fails when the file and a fresh build differ.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pkgutil
import sys
from typing import Any

import orjson

from mcptap.protocol import shape_fast

FILE = "data/shape-quick.json"
#: the modules whose code decides the shipped text
GENERATOR = ("shape_fast.py", "shape_gen.py", "shape_graph.py", "shapes.py", "shape_verdict.py", "tagged.py", "shape_shipped.py", "shape_ship_gen.py")
#: variant -> compile_model's (member, json_keys): the check shapes.check uses, a result's (checker), a body's params (checker)
VARIANTS: dict[str, tuple[str | None, bool]] = {"body": (None, False), "json": (None, True), "params": ("params", True)}
MISSING: Any = object()                 # not shipped: generate it


def inputs() -> str | None:
    """SHA-256 (hex) of what the shipped text is made from: the generating
    modules (:func:`generator`), every ``.py`` file of mcp-types, pydantic's
    ``version.py`` (it names the pydantic-core it goes with) and the Python
    version; found without importing them. None when one cannot be read."""
    gen = generator()
    if gen is None:
        return None
    h = hashlib.sha256(f"python {sys.version_info[0]}.{sys.version_info[1]}\n{gen}\n".encode())
    try:
        for package, only in (("mcp_types", None), ("pydantic", "version.py")):
            spec = importlib.util.find_spec(package)
            if spec is None or not spec.submodule_search_locations:
                return None
            root = list(spec.submodule_search_locations)[0]
            loader: Any = spec.loader
            if not hasattr(loader, "get_data"):
                return None
            for rel in _sources(root, only):
                data = loader.get_data(os.path.join(root, rel))       # the package's own reader, as shapes reads methods.py
                h.update(b"%s/%s %d\n" % (package.encode(), rel.encode(), len(data)) + data)
    except (OSError, ImportError, ValueError):
        return None
    return h.hexdigest()


def generator() -> str | None:
    """SHA-256 (hex) of the generating modules' source (:data:`GENERATOR`): the
    part of :func:`inputs` that is ours, so a test can tell our own drift (the
    file must be rebuilt) from another pydantic, mcp-types or Python installed
    (the file is then unused, and checks are generated as before)."""
    h = hashlib.sha256()
    try:
        for name in GENERATOR:
            data = pkgutil.get_data("mcptap.protocol", name)
            if data is None:
                return None
            h.update(b"%s %d\n" % (name.encode(), len(data)) + data)
    except OSError:
        return None
    return h.hexdigest()


def _sources(root: str, only: str | None) -> list[str]:
    if only is not None:
        return [only]
    out = []
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        out += [os.path.relpath(os.path.join(dirpath, f), root) for f in files if f.endswith(".py")]
    return sorted(out)


class Shipped:
    """The loaded file (a document as protocol/shape_ship_gen.document builds it)."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.models: dict[str, dict[str, list[str] | None]] = doc["models"]
        self.empties: dict[str, dict[str, list[list[str]]]] = doc["empty"]
        self.loaded: dict[tuple[str, str], Any] = {}

    def quick(self, arms: list[str], variant: str) -> Any:
        """The quick check (``shape_fast.Quick``) of the model with these arms (the
        surface table's ``module:class`` names) in ``variant``; None when the model
        has none; :data:`MISSING` when not shipped."""
        name = " | ".join(arms)
        hit = self.loaded.get((name, variant), MISSING)
        if hit is MISSING:
            row = self.models.get(name)
            if row is None or variant not in row:
                return MISSING
            made = row[variant]
            hit = self.loaded[name, variant] = None if made is None else shape_fast.load(made[0], made[1], label=name)
        return hit

    def empty(self, surface: str, key: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """The error messages of an absent and of an empty payload for ``key``
        (``"METHOD REVISION"``) of ``surface``; None when not shipped."""
        row = self.empties.get(surface, {}).get(key)
        return None if row is None else (tuple(row[0]), tuple(row[1]))


_LOADED: list[Shipped | None] = []


def shipped() -> Shipped | None:
    """The shipped file when it was written from the installed inputs, else None (read once)."""
    if not _LOADED:
        doc = None
        try:
            raw = pkgutil.get_data("mcptap.protocol", FILE)
            doc = orjson.loads(raw) if raw is not None else None
        except (OSError, orjson.JSONDecodeError):
            pass
        fresh = type(doc) is dict and doc.get("inputs") is not None and doc.get("inputs") == inputs()
        _LOADED.append(Shipped(doc) if fresh and doc is not None else None)
    return _LOADED[0]
