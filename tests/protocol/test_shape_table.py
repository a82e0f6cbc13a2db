"""The shipped surface table (protocol/data/shape-surfaces.json) is
``mcp_types.methods``' surface maps for the installed mcp-types, and shape
checks through it import only the schema eras a capture uses."""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcptap.model import Direction, Kind
from mcptap.protocol import shapes

pytestmark = pytest.mark.skipif(not shapes.available(), reason="mcp-types not installed")
ROOT = Path(__file__).resolve().parents[2]
C2S, S2C = Direction.C2S, Direction.S2C


def test_the_shipped_table_is_the_installed_releases_surface_maps() -> None:
    from mcp_types import methods

    assert shapes._shipped_table() is not None, "mcp-types changed: run scripts/gen_shape_table.py"
    assert shapes._shipped_table() == shapes.build_table(methods)
    for name in shapes.SURFACES:
        assert _named(shapes.surface(name)) == _named(getattr(methods, name)), name


def _named(surface: Any) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """A surface map with its models as (module, class) names: the shape
    checks' era packages are not the SDK's (``shapes._era``)."""
    return {key: [(arm.__module__, arm.__qualname__) for arm in getattr(model, "__args__", (model,))] for key, model in surface.items()}


_PROBE = """
import sys
from mcptap.check.parallel import check_capture
from mcptap.protocol import shape_shipped, shapes
shape_shipped._LOADED.append(None)      # no shipped quick checks: every key's model imported (test_shape_shipped.py has them)
check_capture(sys.argv[1])
print(" ".join(sorted(shapes._ERAS)), "|", " ".join(sorted(m for m in sys.modules if m.startswith("mcp_types"))), "|")
from mcp import Client
from mcp_types import methods
import mcp_types._v2025_11_25
tools_call = mcp_types._v2025_11_25.CallToolRequest     # the real package has its era packages as attributes
same = all(_named(shapes.surface(n)) == _named(getattr(methods, n)) for n in shapes.SURFACES)
print(same)
"""


@pytest.mark.parametrize(("capture", "era"), [("clean-2025-06-18.jsonl", "mcp_types._v2025_11_25"),
                                               ("stateless-2026-07-28.jsonl", "mcp_types._v2026_07_28")])
def test_check_imports_only_the_eras_a_capture_uses(capture: str, era: str) -> None:
    """A fresh process checking a capture of one era imports that era's wire
    models, not the other's nor the package's version-free ones, and leaves
    no mcp_types module behind: the SDK imported afterwards gets the real
    package, whose surface maps name the same models."""
    probe = "from typing import Any\n" + inspect.getsource(_named) + _PROBE
    out = subprocess.run([sys.executable, "-c", probe, str(ROOT / "captures" / capture)], capture_output=True, text=True, check=True).stdout
    eras, modules, rest = out.split("|")
    assert eras.split() == [era]
    assert modules.split() == [], "the shape checks' imports left mcp_types modules behind"
    assert rest.split() == ["True"]


@pytest.fixture
def fresh_shapes() -> Iterator[None]:
    """shapes' module state set back before and after the test."""
    saved = {k: getattr(shapes, k) for k in ("_LOADED", "_M", "_TABLE", "_SHIPPED")}

    def reset() -> None:
        shapes._LOOKUP.clear()
        shapes._VALIDATE.clear()
        shapes._CACHE.clear()
        shapes._from_table.cache_clear()

    reset()
    shapes._LOADED = False
    yield
    reset()
    for k, v in saved.items():
        setattr(shapes, k, v)


CASES: list[tuple[Direction, Kind, str, Any, str, Any]] = [
    (C2S, Kind.REQUEST, "tools/call", {"name": "echo", "arguments": {"x": 1}}, "2025-11-25", None),
    (C2S, Kind.REQUEST, "tools/call", {"arguments": {}}, "2025-06-18", None),
    (S2C, Kind.RESPONSE, "tools/call", {"content": "not a list"}, "2024-11-05", None),
    (S2C, Kind.RESPONSE, "prompts/get", {"messages": 3}, "2026-07-28", None),
    (S2C, Kind.RESPONSE, "tools/call", {"task": {"taskId": 1}}, "2025-11-25", {"name": "x", "task": {}}),
    (S2C, Kind.NOTIFICATION, "notifications/progress", {"progress": "x"}, "2026-07-28", None),
    (C2S, Kind.REQUEST, "ping", None, "2025-03-26", None),
    (C2S, Kind.REQUEST, "vendor/thing", {}, "2025-11-25", None),
]


def _all() -> list[list[tuple[str, str]]]:
    return [[(f.code, f.message) for f in shapes.check(*case)] for case in CASES]


def test_another_mcp_types_release_goes_through_its_methods_module(fresh_shapes: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``methods.py`` other than the one the table was written from: the
    table is not used, ``mcp_types.methods`` is, with the same findings."""
    via_table = _all()
    assert shapes._TABLE is not None and shapes._M is None
    assert any(via_table) and not all(via_table)
    shapes._LOOKUP.clear()
    shapes._CACHE.clear()
    shapes._LOADED = False
    monkeypatch.setattr(shapes, "_methods_source", lambda: b"# another release\n")
    assert _all() == via_table
    assert shapes._TABLE is None and shapes._M is not None
