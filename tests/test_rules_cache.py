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
