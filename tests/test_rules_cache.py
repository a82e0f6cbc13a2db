"""Annotations are a cache: a capture written under the current rules is not
re-annotated from scratch; the recorded annotations (plus schema shape checks)
must equal what full re-annotation computes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from casefiles import CASES, wires
from mcptap.capture.reader import CaptureStream
from mcptap.protocol.fingerprint import rules_fingerprint
from mcptap.reannotate import reannotate
from scripted import c2s, err, handshake, record, req, res, s2c

sys.path.insert(0, str(Path(__file__).parent))
from test_cases_stdio import record_wire

STDIO = wires("stdio")


def _both(path: Path, light: bool):
    s1 = CaptureStream(str(path))
    assert s1.header["rules"] == rules_fingerprint() != ""
    fast = list(reannotate(s1.header, s1, shapes=True, light=light))
    s2 = CaptureStream(str(path))
    header = dict(s2.header, rules="sha256:something-else")
    full = list(reannotate(header, s2, shapes=True, light=light))
    return fast, full


def key(r):
    return (r.get("type"), r.get("seq"), sorted((f["code"], f["severity"]) for f in r.get("findings", ())), r.get("pair"))


@pytest.mark.skipif(not STDIO, reason=f"handed cases not found at {CASES}")
@pytest.mark.parametrize("light", [False, True])
def test_fast_path_equals_full_reannotation(tmp_path: Path, light: bool) -> None:
    for w in STDIO:
        path = tmp_path / f"{w.case}-{w.name}.jsonl"
        record_wire(w, path)
        fast, full = _both(path, light)
        assert [key(r) for r in fast if r["type"] != "end"] == [key(r) for r in full if r["type"] != "end"], f"{w.case}/{w.name}"
        assert fast[-1]["severities"] == full[-1]["severities"], f"{w.case}/{w.name}"


def test_sdk_session_fast_path_adds_shape_checks(tmp_path: Path) -> None:
    """A capture with a planted shape error: the fast path must still find it."""
    path = record(tmp_path / "c.jsonl", handshake("2025-11-25", {"tools": {}}) + [
        c2s(req(2, "tools/list")), s2c(res(2, {"tools": [{"name": "x"}]}))])       # inputSchema missing
    fast, full = _both(path, light=True)
    assert [key(r) for r in fast] == [key(r) for r in full]
    assert any(f["code"] == "shape.invalid_result" for r in fast for f in r.get("findings", ()))


def test_cut_short_capture_lists_open_requests_like_the_full_path(tmp_path: Path) -> None:
    path = record(tmp_path / "c.jsonl", handshake("2025-11-25", {"tools": {}}) + [
        c2s(req("a", "tools/list")), c2s(req(3, "tools/call", {"name": "x"})), s2c(err(3, -32602, "no"))],
        end=False)                                                              # killed before the end record
    fast, full = _both(path, light=False)
    pick = lambda end: [(p["seq"], p["dir"], p["id"], p["method"]) for p in end["pending"]]  # noqa: E731
    assert pick(fast[-1]) == pick(full[-1]) == [(4, "c2s", "a", "tools/list")]
    assert [f["severity"] for f in fast[-1]["unanswered"]] == ["info"]


@pytest.mark.parametrize("light", [False, True])
def test_cut_short_capture_counts_bytes_like_the_full_path(tmp_path: Path, light: bool) -> None:
    """`show`'s summary of a killed capture gave byte counts when re-annotated and
    "unknown (no end record)" when its annotations were reused: same capture, two answers."""
    path = record(tmp_path / "c.jsonl", handshake("2025-11-25", {"tools": {}}) + [
        c2s(req(2, "tools/list")), s2c(res(2, {"tools": []})), c2s(req(3, "tools/call", {"name": "é"}))],
        end=False)
    fast, full = _both(path, light=light)
    for k in ("c2s", "s2c", "stderr", "pending", "severities", "codes"):
        assert fast[-1][k] == full[-1][k], k
    assert fast[-1]["c2s"]["messages"] == 4 and fast[-1]["s2c"]["messages"] == 2


#: modules the annotating code imports that do not decide recorded annotations: schema shape
#: checks are computed afresh by every reader (never reused), the fingerprint is the key itself
_NOT_RULES = {"mcptap.protocol.shapes", "mcptap.protocol.shape_fast", "mcptap.protocol.shape_gen", "mcptap.protocol.shape_graph",
              "mcptap.protocol.shape_shipped", "mcptap.protocol.shape_table", "mcptap.protocol.shape_ship_gen", "mcptap.protocol.schema_fast",
              "mcptap.protocol.tagged", "mcptap.protocol.fingerprint", "mcptap.protocol.shape_verdict"}


def _protocol_imports(roots: list[str]) -> set[str]:
    """The mcptap.protocol modules ``roots`` import, transitively (static imports, any depth)."""
    import ast
    import importlib.util

    seen: set[str] = set()
    todo = list(roots)
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        spec = importlib.util.find_spec(mod)
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            continue
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mcptap"):
                todo.append(node.module)
                todo.extend(f"{node.module}.{a.name}" for a in node.names
                            if importlib.util.find_spec(node.module) is not None and _is_module(f"{node.module}.{a.name}"))
            elif isinstance(node, ast.Import):
                todo.extend(a.name for a in node.names if a.name.startswith("mcptap"))
    return {m for m in seen if m.startswith("mcptap.protocol.")}


def _is_module(name: str) -> bool:
    import importlib.util
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def test_fingerprint_covers_every_module_that_decides_annotations() -> None:
    # a change to a parser the rules read through (jsonparse's oddities, skeleton, SSE fields, URL
    # parsing) changes annotations: a capture recorded before must not have its stale ones reused
    from mcptap.protocol.fingerprint import _RULE_MODULES

    used = _protocol_imports(["mcptap.protocol.annotate", "mcptap.recorder", "mcptap.recording", "mcptap.reannotate"])
    missing = sorted(m for m in used - _NOT_RULES if m.rsplit(".", 1)[1] not in _RULE_MODULES)
    assert not missing, f"add to fingerprint._RULE_MODULES (or to _NOT_RULES with a reason): {missing}"
    assert "mcptap.protocol.jsonparse" in used and "mcptap.protocol.annotator_state" in used     # the walk sees through
