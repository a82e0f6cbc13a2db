"""``--ignore`` applies to the server surface too (diff/surface.py ``Surface.feed``): the
serverInfo and instructions items were built from unmasked results, so
``diff A B --ignore result.serverInfo.version`` still listed ``serverInfo.version`` and
exited 1 (any server version bump failed a CI diff), and replay printed the line but exited
0. Now both take the ignored paths out before comparing surfaces, an ignored item is never
shown nor counted, and a surface difference fails replay as it fails diff."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.compare.mask import Masker
from mcptap.diff.captures import diff_captures
from mcptap.diff.surface import Surface, compare_surface

ROOT = Path(__file__).resolve().parents[1]
INIT = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"},
        "instructions": "built 12:00"}
BUMPED = {**INIT, "serverInfo": {"name": "s", "version": "1.0.1"}, "instructions": "built 13:00"}


def _items(ignore: list[str]) -> list[str]:
    m = Masker(ignore)
    a, b = Surface(), Surface()
    a.feed("initialize", {}, INIT, m)
    b.feed("initialize", {}, BUMPED, m)
    return [it.detail for it in compare_surface(a, b)]


def test_surface_items_follow_ignore() -> None:
    assert _items([]) == ["serverInfo.version: '1' -> '1.0.1'", "server instructions changed"]
    assert _items(["result.serverInfo.version"]) == ["server instructions changed"]
    assert _items(["result.instructions", "initialize:result.serverInfo.version"]) == []
    assert _items(["initialize:result"]) == []
    assert _items(["tools/list:result.serverInfo.version"]) == ["serverInfo.version: '1' -> '1.0.1'", "server instructions changed"]


@pytest.mark.parametrize("ignore", ["result.serverInfo.version", "initialize:result", "**.version"])
def test_diff_a_version_bump_ignored_is_no_difference(tmp_path: Path, ignore: str) -> None:
    from replay.capgen import Ex, write_capture

    pa, pb = str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")
    write_capture(pa, [Ex("tools/call", {"name": "t"}, {"content": [], "isError": False})], server_info={"name": "s", "version": "1"})
    write_capture(pb, [Ex("tools/call", {"name": "t"}, {"content": [], "isError": False})], server_info={"name": "s", "version": "1.0.1"})
    assert [it.detail for it in diff_captures(pa, pb).items] == ["serverInfo.version: '1' -> '1.0.1'",
                                                                "initialize: result.serverInfo.version: '1' -> '1.0.1'"]
    assert diff_captures(pa, pb, ignore=[ignore]).items == []
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "diff", pa, pb, "--ignore", ignore], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0 and "serverInfo" not in proc.stdout, proc.stdout + proc.stderr


BUMPED_SERVER = """
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" in m and "method" in m:
        if m["method"] == "initialize":
            r = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "gen", "version": "2"},
                 "instructions": "built today"}
        elif m["method"] == "tools/list":
            r = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
        else:
            r = {"content": [], "isError": False}
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"""


def test_replay_ignores_the_surface_as_diff_does(tmp_path: Path) -> None:
    from replay.capgen import Ex, write_capture

    cap = str(tmp_path / "cap.jsonl")
    write_capture(cap, [Ex("tools/call", {"name": "t"}, {"content": [], "isError": False})],
                  caps={"tools": {}}, tools=[{"name": "t", "inputSchema": {"type": "object"}}])
    server = tmp_path / "server.py"
    server.write_text(BUMPED_SERVER)

    def replay(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mcptap.cli.main", "replay", cap, "--allow-side-effects", "--timeout", "20",
                               *extra, "--", sys.executable, str(server)], capture_output=True, text=True, cwd=tmp_path,
                              timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})

    changed = replay()
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "serverInfo.version: '1' -> '2'" in changed.stdout and "server instructions changed" in changed.stdout
    same = replay("--ignore", "result.serverInfo.version", "--ignore", "result.instructions")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "serverInfo" not in same.stdout and "instructions" not in same.stdout and "surface:" not in same.stdout
