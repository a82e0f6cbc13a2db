"""Deep nesting (issue 9 item 5): every analysis path handles any depth the
relay accepts, or says clearly what it did not do; no RecursionError, no
traceback. orjson parses up to 1024 levels (deeper messages are kept as raw
bytes, unparsed) and encodes up to 254; Python's recursion gives out near 1000."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from mcptap.compare.depth import MAX_DEPTH, bounded, depth, digest
from mcptap.compare.mask import Masker
from mcptap.compare.paths import json_diff
from mcptap.compare.verdict import compare_responses
from scripted import c2s, handshake, record, s2c

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


def nested(n: int, leaf: str = "x") -> bytes:
    return b"[" * n + orjson.dumps(leaf) + b"]" * n


def deep_value(n: int, leaf: str = "x") -> object:
    v: object = leaf
    for _ in range(n):
        v = [v]
    return v


def call(i: int, n: int, leaf: str) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"x":%s}}}\n' % (i, nested(n, leaf))


def answer(i: int, n: int, leaf: str) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"structuredContent":{"x":%s}}}\n' % (i, nested(n, leaf))


def test_depth_digest_and_bounded_never_recurse() -> None:
    a, b = deep_value(20_000, "a"), deep_value(20_000, "b")
    assert depth(a) == 20_000
    assert digest(a) != digest(b) and digest(a) == digest(deep_value(20_000, "a"))
    ba, bb = bounded(a), bounded(b)
    assert depth(ba) == MAX_DEPTH - 1 and ba != bb
    assert bounded(deep_value(20_000, "a")) == ba
    shallow = {"k": [1, {"x": "y"}]}
    assert bounded(shallow) is shallow


def test_digest_is_canonical_json() -> None:
    import hashlib

    v = {"b": [1, 2.5, None, True, "s"], "a": {"z": {}, "y": []}}
    assert digest(v) == hashlib.sha256(orjson.dumps(v, option=orjson.OPT_SORT_KEYS)).hexdigest()


@pytest.mark.parametrize("n", [990, 1020, 5000])
def test_compare_walkers_at_any_depth(n: int) -> None:
    a, b = deep_value(n, "a"), deep_value(n, "b")
    changes = json_diff({"x": a}, {"x": b})
    assert changes and changes[0].kind == "changed"
    assert json_diff({"x": a}, {"x": deep_value(n, "a")}) == []
    m = Masker()
    assert m.fingerprint(a) != m.fingerprint(b)
    v = compare_responses({"jsonrpc": "2.0", "id": 1, "result": {"x": a}}, {"jsonrpc": "2.0", "id": 1, "result": {"x": b}})
    assert v.status != "MATCH"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPTAP, *args], capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("n", [990, 1020, 1100])
def test_check_show_and_diff_at_any_depth(tmp_path: Path, n: int) -> None:
    a = record(tmp_path / "a.jsonl", [*handshake(), c2s(call(2, n, "a")), s2c(answer(2, n, "a"))])
    b = record(tmp_path / "b.jsonl", [*handshake(), c2s(call(2, n, "b")), s2c(answer(2, n, "b"))])
    for args in (("check", str(a)), ("show", str(a)), ("diff", str(a), str(a)), ("diff", str(a), str(b))):
        p = _run(*args)
        assert "Traceback" not in p.stderr and "RecursionError" not in p.stderr + p.stdout, (args, p.stderr[-2000:])
        assert p.returncode in (0, 1), (args, p.stderr)
    same, diff = _run("diff", str(a), str(a)), _run("diff", str(a), str(b))
    assert same.returncode == 0
    if n <= 1024:                         # parsed: the change is found below the nesting
        assert diff.returncode == 1 and "changed" in diff.stdout
    else:                                 # past the parser's limit: relayed, and said so
        assert "framing.nesting_too_deep" in _run("check", str(a)).stdout


SERVER = """
import sys, orjson
for line in sys.stdin.buffer:
    m = orjson.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        r = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}
    else:
        r = {"content": [], "structuredContent": {"x": m["params"]["arguments"]["x"]}}
    sys.stdout.buffer.write(orjson.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + b"\\n")
    sys.stdout.flush()
"""


def test_replay_at_depth(tmp_path: Path) -> None:
    server = tmp_path / "server.py"
    server.write_text(SERVER)
    # 240 levels: sent and compared (past MAX_DEPTH, by digest); 300: more than the encoder handles, said so
    cap = record(tmp_path / "a.jsonl", [*handshake(), c2s(call(2, 240, "a")), s2c(answer(2, 240, "a")),
                                       c2s(call(3, 300, "a")), s2c(answer(3, 300, "a"))])
    p = _run("replay", str(cap), "--allow-side-effects", "-o", str(tmp_path / "r.jsonl"), "--", sys.executable, str(server))
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    assert p.returncode == 1, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert any("#4" in x and "MATCH" in x for x in lines), p.stdout
    assert any("#6" in x and "deeper than the JSON encoder handles" in x for x in lines), p.stdout


@pytest.mark.parametrize("n", [990, 1020])
def test_every_reader_at_any_depth(tmp_path: Path, n: int) -> None:
    """The text and Mermaid timelines (a log message's data), ``export``,
    ``report`` and ``scrub`` at the depths between Python's recursion limit and
    the parser's: they used to stop with ``internal error: RecursionError``."""
    log = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":' + nested(n) + b"}}\n"
    a = record(tmp_path / "a.jsonl", [*handshake(), c2s(call(2, n, "a")), s2c(log), s2c(answer(2, n, "a"))])
    for args in (("show", str(a)), ("show", "--format", "mermaid", str(a)), ("show", "--format", "json", str(a)),
                 ("export", "--format", "messages", str(a)), ("export", "--format", "otlp-json", str(a)),
                 ("report", str(a), "-o", str(tmp_path / "r.html")), ("report", "--no-scrub", str(a), "-o", str(tmp_path / "r.html")),
                 ("scrub", str(a), "-o", str(tmp_path / "s.jsonl"))):
        p = _run(*args)
        assert "Traceback" not in p.stderr and "RecursionError" not in p.stderr + p.stdout, (args, p.stderr[-2000:])
        assert p.returncode == 0, (args, p.stderr)
    lines = _run("export", "--format", "messages", str(a)).stdout.splitlines()
    assert any(orjson.loads(x).get("method") == "notifications/message" for x in lines)
