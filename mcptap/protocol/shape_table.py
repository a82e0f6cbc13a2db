"""The wire models' surface table and era packages of mcp-types (pure, level 1;
used by protocol/shapes.py): :func:`build_table` (the table
``scripts/gen_shape_table.py`` writes) and :func:`era` (an era package imported
without running ``mcp_types/__init__``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType, UnionType
from typing import Any

SURFACES = ("CLIENT_REQUESTS", "SERVER_REQUESTS", "CLIENT_NOTIFICATIONS", "SERVER_NOTIFICATIONS", "CLIENT_RESULTS", "SERVER_RESULTS")
PACKAGE = "mcp_types"


def build_table(methods: Any) -> dict[str, Any]:
    """The surface table of an imported ``mcp_types.methods``: for each of
    ``SURFACES``, ``"METHOD REVISION"`` -> ``"module:class"`` of each arm of
    its model (one for a model, several for a ``X | Y`` union)."""
    out: dict[str, Any] = {}
    for name in SURFACES:
        rows: dict[str, list[str]] = {}
        for (method, revision), model in sorted(getattr(methods, name).items()):
            arms = model.__args__ if isinstance(model, UnionType) else (model,)
            rows[f"{method} {revision}"] = [f"{arm.__module__}:{arm.__qualname__}" for arm in arms]
        out[name] = rows
    return out


ERAS: dict[str, ModuleType] = {}


def era(name: str) -> ModuleType:
    """An era package of mcp-types (``mcp_types._v2025_11_25``). While the
    ``mcp_types`` package itself is not imported, its ``__init__`` is not run
    for this (it imports the version-free models, ~0.15 s): the era package is
    imported under a stand-in for its parent (the real package's spec and
    path, not executed), and it, the stand-in and whatever else came in under
    it leave ``sys.modules`` again, so that a later ``import mcp_types`` (the
    SDK's) imports the real package as if this had not happened (its own
    copies of the era's models). Raises ImportError."""
    mod = ERAS.get(name) or sys.modules.get(name)
    if mod is not None:
        return mod
    if PACKAGE in sys.modules:
        return importlib.import_module(name)
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None:
        raise ImportError(f"{PACKAGE} is not installed")
    before = set(sys.modules)
    sys.modules[PACKAGE] = importlib.util.module_from_spec(spec)
    try:
        mod = ERAS[name] = importlib.import_module(name)
    finally:
        for key in set(sys.modules) - before:
            if key == PACKAGE or key.startswith(PACKAGE + "."):
                del sys.modules[key]
    return mod
