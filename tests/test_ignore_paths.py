"""``--ignore PATH`` syntax (compare/mask.py, docs/replay-diff.md): a path that is no path
(``bad[path``, ``a..b``, ``a[x]``) was taken apart as far as it went and then ignored the
wrong field or nothing, silently; now diff, replay and serve refuse it as a usage error that
names it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcptap.compare.mask import Masker, parse_ignore

ROOT = Path(__file__).resolve().parents[1]
CAPTURE = str(ROOT / "captures" / "clean-2025-06-18.jsonl")


@pytest.mark.parametrize(("text", "method", "segments"), [
    ("result.structuredContent.now", None, ("result", "structuredContent", "now")),
    ("tools/call:result.content[*].text", "tools/call", ("result", "content", "[*]", "text")),
    ("[0].x", None, ("[0]", "x")),
    ("result.items[03][1]", None, ("result", "items", "[3]", "[1]")),
    ("a.**.b", None, ("a", "**", "b")),
    (" params.arguments.text ", None, ("params", "arguments", "text")),
])
def test_good_paths(text: str, method: str | None, segments: tuple[str, ...]) -> None:
    p = parse_ignore(text)
    assert (p.method, p.segments) == (method, segments)


@pytest.mark.parametrize(("text", "why"), [
    ("bad[path", "'[' without ']'"),
    ("a]b", "']' without '['"),
    ("a[[0]]", "'[' inside [...]"),
    ("a..b", "empty key"), ("a.", "empty key"), (".a", "empty key"),
    ("a.[0]", "a[0], not a.[0]"),
    ("a[0]b", "needs a '.'"),
    ("a[x]", "[x] is no list index"), ("result.tools[name=echo]", "[name=echo] is no list index"), ("a[]", "[] is no list index"),
    (":result", "nothing before ':'"), ("tools/call:", "the path is empty"), ("", "the path is empty"), ("  ", "the path is empty"),
])
def test_bad_paths_are_named(text: str, why: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_ignore(text)
    assert f"bad ignore path {text!r}" in str(info.value) and why in str(info.value)


def test_a_leading_zero_index_masks_that_item() -> None:
    assert Masker(["result.a[01]"]).mask({"a": [1, 2, 3]}) == {"a": [1, "<masked>", 3]}


@pytest.mark.parametrize("argv", [
    ("diff", CAPTURE, CAPTURE, "--ignore", "result.ok", "--ignore", "bad[path"),
    ("replay", CAPTURE, "--ignore", "bad[path", "--", sys.executable, "-c", "pass"),
    ("serve", CAPTURE, "--listen", "127.0.0.1:0", "--ignore", "bad[path"),
])
def test_cli_refuses_a_bad_path(tmp_path: Path, argv: tuple[str, ...]) -> None:
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", *argv], cwd=tmp_path, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60, env={**os.environ, "MCPTAP_DIR": str(tmp_path)})
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"mcptap: {argv[0]}: Invalid value for '--ignore': bad ignore path 'bad[path': '[' without ']'")
    assert len(proc.stderr.splitlines()) == 1 and list(tmp_path.iterdir()) == []


# -- an ignored field present on one side only -----------------------------------------
# (the value was masked but the key kept, so ``+result.cacheScope: '<masked>'`` still made
# the exchange differ; an ignored path must never make an exchange differ)

def test_an_ignored_key_on_one_side_only_is_no_difference() -> None:
    from mcptap.compare.verdict import MATCH, compare_responses

    m = Masker(["result.cacheScope", "result.items[*].seen", "result.tail[2]", "result.all[*]"])
    a = {"jsonrpc": "2.0", "id": 1, "result": {"n": 1, "items": [{"k": 1}], "tail": [1, 2], "all": [1]}}
    b = {"jsonrpc": "2.0", "id": 1, "result": {"n": 1, "cacheScope": "public", "items": [{"k": 1, "seen": 3}],
                                               "tail": [1, 2, 3], "all": [7, 8, 9]}}
    assert compare_responses(a, b, "tools/call", m).status == MATCH
    assert compare_responses(b, a, "tools/call", m).status == MATCH
    # what is not ignored still counts, and a trailing volatile value is not an ignored item
    c = {"jsonrpc": "2.0", "id": 1, "result": {**b["result"], "n": 2}}
    assert compare_responses(a, c, "tools/call", m).status != MATCH
    assert Masker(["result.x[5]"]).mask({"x": [1, "2026-01-01T00:00:00Z"]}) == {"x": [1, "<masked>"]}
    # request matching and serve --strict treat an ignored argument the same way
    p = Masker(["params.arguments.trace", "params.extra"])
    assert p.fingerprint({"name": "t", "arguments": {"q": 1}}, "tools/call", "params") == \
        p.fingerprint({"name": "t", "arguments": {"q": 1, "trace": "x"}}, "tools/call", "params")
    assert p.fingerprint({"extra": 1}, "ping", "params") == p.fingerprint(None, "ping", "params")
    assert p.ignored({"name": "t", "arguments": {"q": 1, "trace": 1}}, "tools/call") == {"name": "t", "arguments": {"q": 1}}


def test_diff_ignores_a_field_one_capture_lacks(tmp_path: Path) -> None:
    from mcptap.diff.captures import diff_captures
    from replay.capgen import Ex, write_capture

    pa, pb = str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")
    write_capture(pa, [Ex("tools/call", {"name": "t"}, {"content": [], "isError": False})])
    write_capture(pb, [Ex("tools/call", {"name": "t"}, {"content": [], "isError": False, "ttlMs": 5, "cacheScope": "x"})])
    assert diff_captures(pa, pb).items != []
    assert diff_captures(pa, pb, ignore=["result.ttlMs", "result.cacheScope"]).items == []
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "diff", pa, pb, "--ignore", "result.ttlMs",
                           "--ignore", "result.cacheScope"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr


LEAN_SERVER = """
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" in m and "method" in m:
        if m["method"] == "initialize":
            r = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "gen", "version": "1"}}
        elif m["method"] == "tools/list":
            r = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
        else:
            r = {"content": [], "isError": False}
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"""


def test_replay_ignores_a_field_the_live_server_no_longer_sends(tmp_path: Path) -> None:
    from replay.capgen import Ex, write_capture

    cap = str(tmp_path / "cap.jsonl")
    write_capture(cap, [Ex("tools/call", {"name": "t"}, {"content": [], "isError": False, "cacheScope": "x"})],
                  caps={"tools": {}}, tools=[{"name": "t", "inputSchema": {"type": "object"}}])
    server = tmp_path / "server.py"
    server.write_text(LEAN_SERVER)

    def replay(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mcptap.cli.main", "replay", cap, "--allow-side-effects", "--timeout", "20",
                               *extra, "--", sys.executable, str(server)], capture_output=True, text=True, cwd=tmp_path,
                              timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})

    changed = replay()
    assert changed.returncode == 1 and "cacheScope" in changed.stdout, changed.stdout + changed.stderr
    same = replay("--ignore", "tools/call:result.cacheScope")
    assert same.returncode == 0, same.stdout + same.stderr


# -- an ignored list item in the middle, a volatile key on one side only ------------------
# (a list whose ignored item was its last one on one side was cut there, so the item the
# other side kept at that index was listed as ``-result.items[1]: '<masked>'``; a volatile
# key was masked but kept, so ``+result.timestamp: '<masked>'`` made the exchange differ)

def _paths(m: Masker, a: Any, b: Any) -> list[tuple[str, str]]:
    from mcptap.compare.verdict import compare_responses

    v = compare_responses({"jsonrpc": "2.0", "id": 1, "result": a}, {"jsonrpc": "2.0", "id": 1, "result": b}, "tools/call", m)
    return [(p.path, p.kind) for p in v.paths]


@pytest.mark.parametrize("path", ["result.items[1]", "result.*[1]", "tools/call:**.items[1]"])
def test_an_ignored_item_in_the_middle_is_never_a_difference(path: str) -> None:
    m = Masker([path])
    # B lacks the item after the ignored one: that item is the difference, not the ignored one
    assert _paths(m, {"items": [1, "x", 3]}, {"items": [1, "y"]}) == [("result.items[2]", "removed")]
    assert _paths(m, {"items": [1, "y"]}, {"items": [1, "x", 3]}) == [("result.items[2]", "added")]
    assert _paths(m, {"items": [1, "x", 3]}, {"items": [1, 3]}) == [("result.items[2]", "removed")]
    assert _paths(m, {"items": [1, "x", 3, 4]}, {"items": [1, "y", 3]}) == [("result.items[3]", "removed")]
    # nothing but ignored items differ: no difference, whichever side is longer
    assert _paths(m, {"items": [1, "x"]}, {"items": [1]}) == []
    assert _paths(Masker(["result.items[1]", "result.items[2]"]), {"items": [1, "x", "y"]}, {"items": [1, "z"]}) == []


def test_a_volatile_key_on_one_side_only_is_no_difference() -> None:
    from mcptap.compare.verdict import MATCH, compare_responses

    m = Masker()
    a = {"n": 1, "timestamp": "2026-01-01T00:00:00Z", "items": [{"k": 1, "createdAt": 5}]}
    b = {"n": 1, "items": [{"k": 1}], "sessionId": "s"}
    assert _paths(m, a, b) == [] and _paths(m, b, a) == []
    assert _paths(m, a, {**b, "n": 2}) == [("result.n", "changed")]
    ra, rb = {"jsonrpc": "2.0", "id": 1, "result": a}, {"jsonrpc": "2.0", "id": 1, "result": b}
    assert compare_responses(ra, rb, "tools/call", m).status == MATCH
    assert m.fingerprint({"q": 1, "cursor": "c1"}, "tools/list", "params") == m.fingerprint({"q": 1}, "tools/list", "params")


def test_diff_counts_neither(tmp_path: Path) -> None:
    from mcptap.diff.captures import diff_captures
    from replay.capgen import Ex, write_capture

    def text(*xs: str) -> list[dict[str, str]]:
        return [{"type": "text", "text": x} for x in xs]

    pa, pb = str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")
    write_capture(pa, [Ex("tools/call", {"name": "t"}, {"content": text("a", "now 1"), "isError": False, "timestamp": "2026-01-01T00:00:00Z"}),
                       Ex("tools/call", {"name": "u"}, {"content": text("a", "now 1", "c"), "isError": False})])
    write_capture(pb, [Ex("tools/call", {"name": "t"}, {"content": text("a"), "isError": False}),
                       Ex("tools/call", {"name": "u"}, {"content": text("a", "now 2"), "isError": False})])
    report = diff_captures(pa, pb, ignore=["result.content[1]"])
    assert [it.detail for it in report.items] == ["tools/call u: -result.content[2]: {\"type\":\"text\",\"text\":\"c\"}"]
