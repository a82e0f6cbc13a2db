"""The shipped quick checks and payload-less verdicts (protocol/shape_shipped.py,
data/shape-quick.json): the file is what a fresh build gives for the installed
inputs; ``check`` then never imports pydantic for valid traffic; a stale or
missing file falls back to generating, with the same findings."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcptap.model import Direction, Kind
from mcptap.protocol import shape_shipped, shapes

pytestmark = pytest.mark.skipif(not shapes.available(), reason="mcp-types not installed")
ROOT = Path(__file__).resolve().parents[2]
C2S, S2C = Direction.C2S, Direction.S2C
KINDS = {"REQUESTS": Kind.REQUEST, "NOTIFICATIONS": Kind.NOTIFICATION, "RESULTS": Kind.RESPONSE}


def test_the_shipped_file_is_a_fresh_build() -> None:
    """Drift (another generator, pydantic, mcp-types or Python): run scripts/gen_shape_table.py."""
    from mcptap.protocol.shape_ship_gen import document

    raw = pkgutil.get_data("mcptap.protocol", shape_shipped.FILE)
    assert raw is not None
    shipped = orjson.loads(raw)
    built = document()
    assert built is not None
    assert shipped["generator"] == built["generator"], "the generating code changed: run scripts/gen_shape_table.py"
    if shipped["inputs"] != built["inputs"]:
        # another pydantic, mcp-types or Python than the file was built with (a fresh machine's
        # install): the file is not used, checks are generated (test_a_stale_or_missing_file_*)
        assert shape_shipped.shipped() is None
        pytest.skip("installed pydantic / mcp-types / Python differ from the shipped file's: run scripts/gen_shape_table.py")
    assert shipped == orjson.loads(orjson.dumps(built)), "the shipped quick checks differ from a fresh build: run scripts/gen_shape_table.py"
    assert shape_shipped.shipped() is not None


_PROBE = """
import sys
from mcptap.check.parallel import check_capture
report = check_capture(sys.argv[1])
print(report.messages, 'pydantic' in sys.modules, sorted(m for m in sys.modules if m.startswith('mcp_types')))
"""


@pytest.mark.parametrize("capture", ["clean-2025-06-18.jsonl", "stateless-2026-07-28.jsonl"])
def test_check_of_valid_traffic_imports_neither_pydantic_nor_the_models(capture: str) -> None:
    if shape_shipped.shipped() is None:
        pytest.skip("the shipped file was built for other pydantic / mcp-types / Python: checks are generated")
    out = subprocess.run([sys.executable, "-c", _PROBE, str(ROOT / "captures" / capture)], capture_output=True, text=True, check=True).stdout
    messages, pydantic, eras = out.split(" ", 2)
    assert int(messages) > 0
    assert (pydantic, eras.strip()) == ("False", "[]")


@pytest.fixture
def fresh() -> Iterator[None]:
    """shapes' and shape_shipped's module state set back before and after the test."""
    saved = {k: getattr(shapes, k) for k in ("_LOADED", "_M", "_TABLE", "_SHIPPED")}
    loaded = list(shape_shipped._LOADED)

    def reset() -> None:
        for cache in (shapes._LOOKUP, shapes._VALIDATE, shapes._CACHE, shape_shipped._LOADED):
            cache.clear()
        shapes._LOADED = False

    reset()
    yield
    reset()
    shape_shipped._LOADED[:] = loaded
    for k, v in saved.items():
        setattr(shapes, k, v)


PAYLOADS: list[Any] = [None, {}, [], "", 0, {"name": "x"}, {"content": []}, {"progressToken": 1, "progress": 2}, {"cursor": 3}]


def _verdicts() -> list[list[tuple[str, str]]]:
    """Every key of the surface table, each payload above: check's and checker's findings."""
    out = []
    table = shapes._shipped_table()
    assert table is not None
    for name, rows in sorted(table.items()):
        d = C2S if name.startswith("CLIENT") else S2C
        kind = KINDS[name.split("_")[1]]
        for key in sorted(rows):
            method, revision = key.rsplit(" ", 1)
            one = shapes.checker(d, kind, method, revision)
            for payload in PAYLOADS:
                out.append([(f.code, f.message) for f in shapes.check(d, kind, method, payload, revision)])
                out.append([(f.code, f.message) for f in one(payload)])
    return out


@pytest.mark.parametrize("how", ["stale", "missing"])
def test_a_stale_or_missing_file_falls_back_to_generating(fresh: None, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    shipped = _verdicts()
    assert shapes._SHIPPED is not None
    assert any(shipped) and not all(shipped)
    for cache in (shapes._LOOKUP, shapes._VALIDATE, shapes._CACHE, shape_shipped._LOADED):
        cache.clear()
    shapes._LOADED = False
    if how == "stale":
        monkeypatch.setattr(shape_shipped, "inputs", lambda: "another pydantic")
    else:
        monkeypatch.setattr(shape_shipped, "FILE", "data/no-such-file.json")
    assert _verdicts() == shipped
    assert shapes._SHIPPED is None and shape_shipped.shipped() is None
