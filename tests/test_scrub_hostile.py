"""Scrub, report and ``record --redact`` against payloads that used to get
past them: an object key repeated (the parsed value keeps the last, the kept
bytes held the first), a secret used as an object key, integers beyond 64
bits (scrub crashed; ``record --redact`` stopped recording), a number under a
secret key in bytes kept verbatim, and bytes stored unframed (``chunk``
records: base64 when not UTF-8, a secret cut across two chunks, key-named
secrets that only a parsed message shows)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.cli.main import mcptap
from mcptap.model import Direction
from mcptap.recorder import Recorder
from scripted import handshake, record, req, res, s2c
from test_redact_engine import SECRETS

GH = SECRETS["github"]
PW = "hunter2-Correct-Horse"


def run(*args: str, input: bytes | None = None):
    return CliRunner().invoke(mcptap, list(args), input=input, catch_exceptions=False)


def stored_bytes(path: Path) -> bytes:
    """Every payload byte a capture file holds, base64 decoded (what a reader of the file can see)."""
    out = []
    for line in path.read_bytes().splitlines():
        rec = orjson.loads(line)
        for k in ("raw", "data"):
            if isinstance(rec.get(k), str):
                out.append(rec[k].encode("utf-8", "surrogateescape"))
        for k in ("raw_b64", "data_b64"):
            if isinstance(rec.get(k), str):
                out.append(base64.b64decode(rec[k]))
        if "json" in rec:
            out.append(json.dumps(rec["json"]).encode())
    return b"".join(out)        # joined: a secret cut across two chunk records is seen whole


def assert_clean(path: Path, *secrets: str) -> None:
    text = path.read_bytes() + stored_bytes(path)
    for s in secrets:
        assert s.encode() not in text, s


def scrub_ok(src: Path, tmp_path: Path) -> Path:
    out = tmp_path / (src.stem + ".scrubbed.jsonl")
    r = run("scrub", str(src), "-o", str(out))
    assert r.exit_code == 0, r.output
    r = run("check", str(out), "--fail-on", "never")
    assert r.exit_code == 0 and "capture.digest_mismatch" not in r.output and "unreadable" not in r.output, r.output
    return out


def test_repeated_keys_and_secret_keys(tmp_path) -> None:
    src = record(tmp_path / "dup.jsonl", handshake() + [
        # bytes kept verbatim (spaces): a repeated key hid the first value from redaction
        s2c(b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", '
            b'"data": {"token": "' + PW.encode() + b'", "token": "x", "note": "' + GH.encode() + b'", "note": "ok"}}}\n'),
        # a map keyed by a token, and a number under a secret key in verbatim bytes
        s2c(b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", '
            b'"data": {"' + GH.encode() + b'": {"scopes": ["repo"]}, "pin": 1234, "password": 987654}}}\n'),
        s2c(j_compact({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": {GH: 1}}})),
    ])
    assert PW.encode() in src.read_bytes() and GH.encode() in src.read_bytes()
    out = scrub_ok(src, tmp_path)
    assert_clean(out, PW, GH, "987654")
    html = tmp_path / "r.html"
    assert run("report", str(src), "-o", str(html)).exit_code == 0
    text = html.read_text()
    assert PW not in text and GH not in text and "987654" not in text


def j_compact(obj: object) -> bytes:
    return orjson.dumps(obj) + b"\n"


BIG = 123456789012345678901234567890


def test_integers_beyond_64_bits(tmp_path) -> None:
    src = record(tmp_path / "big.jsonl", handshake() + [
        ("c2s", b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x","arguments":{"password":"%s"}}}\n'
         % (BIG, PW.encode())),
        # with a number beyond any double in the message, the exact parse keeps Python ints orjson cannot write
        s2c(b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"n":%d,"x":1e400,"apiKey":"%s"}}\n' % (BIG, BIG, GH.encode())),
    ])
    out = scrub_ok(src, tmp_path)
    assert_clean(out, PW, GH)
    assert str(BIG) in out.read_text()                     # the ids stay exact
    assert run("report", str(src), "-o", str(tmp_path / "r.html")).exit_code == 0


def test_record_redact_keeps_recording_past_a_big_integer(tmp_path) -> None:
    lines = (b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"arguments":{"password":"%s","x":1e400}}}\n' % (BIG, PW.encode())
             + b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{"password":"%s"}}}\n' % PW.encode())
    out = tmp_path / "r.jsonl"
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "--redact", "-q", "-o", str(out), "--", "cat"],
                       input=lines, capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stdout == lines, p.stderr
    assert b"recording stopped" not in p.stderr and b"incomplete" not in p.stderr
    cap = read_capture(str(out))
    assert cap.end is not None and len(list(cap.messages())) == 4      # cat echoes both lines
    assert_clean(out, PW)


def chunked_capture(path: Path) -> Path:
    """A stdio capture whose server bytes were stored unframed: a line with
    invalid UTF-8 (a base64 chunk), a key-named secret, a token cut in two."""
    rec = Recorder(CaptureWriter.open(str(path)), "stdio", {"argv": ["srv"]}, clock=lambda: 1000, started="2026-01-01T00:00:00Z")
    for kind, data in handshake():
        rec.stdio_bytes(Direction(kind), data)
    rec.stdio_bytes(Direction.C2S, req(2, "tools/call", {"name": "x", "arguments": {}}))
    line = (b'{"jsonrpc":"2.0","id":2,"result":{"structuredContent":{"dbPassword":"' + PW.encode() + b'","note":"'
            + GH.encode() + b'","blob":"\xff"},"content":[]}}\n')
    cut = line.index(GH.encode()) + 10
    rec.stdio_unframed(Direction.S2C, line[:cut])
    rec.stdio_unframed(Direction.S2C, line[cut:])
    rec.stdio_unframed(Direction.S2C, res(3, {"content": [], "creds": {"user": "me", "secret": "s3cr3t-value-42"}}))
    rec.stdio_eof(Direction.S2C)
    rec.close()
    return path


def test_chunk_records_are_reframed_before_scrubbing(tmp_path) -> None:
    src = chunked_capture(tmp_path / "chunks.jsonl")
    assert b'"type":"chunk"' in src.read_bytes() and b'"data_b64"' in src.read_bytes()
    assert PW.encode() in stored_bytes(src) and GH.encode() in stored_bytes(src)
    out = scrub_ok(src, tmp_path)
    assert_clean(out, PW, GH, "s3cr3t-value-42")
    html = tmp_path / "r.html"
    assert run("report", str(src), "-o", str(html)).exit_code == 0
    text = html.read_text()
    assert PW not in text and GH not in text and "s3cr3t-value-42" not in text
    # from stdin the chunks cannot be re-framed first: refused, nothing written
    dest = tmp_path / "stdin.jsonl"
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "scrub", "-", "-o", str(dest)], input=src.read_text(),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.startswith("mcptap: ") and p.stderr.count("\n") == 1 and "chunk" in p.stderr
    assert not dest.exists()


@pytest.mark.parametrize("chunk", [b'{"jsonrpc":"2.0","method":"x","params":{"t":"' + GH.encode() + b'","b":"\xff"}}\n'])
def test_record_redact_scans_binary_chunks(tmp_path, chunk) -> None:
    """Live ``record --redact``: a chunk's bytes get the patterns even when they are not UTF-8 (base64)."""
    from mcptap.redact.default import default_redactor
    from mcptap.redact.scrub import Scrubber

    path = tmp_path / "live.jsonl"
    w = CaptureWriter.open(str(path))
    w.transform = Scrubber(default_redactor()).transform
    rec = Recorder(w, "stdio", {"argv": ["srv"]}, clock=lambda: 1000, started="2026-01-01T00:00:00Z")
    rec.stdio_unframed(Direction.S2C, chunk)
    rec.stdio_eof(Direction.S2C)
    rec.close()
    assert_clean(path, GH)
    r = run("check", str(path), "--fail-on", "never")
    assert "capture.digest_mismatch" not in r.output, r.output


def deep(n: int, leaf: bytes) -> bytes:
    return b'{"a":' * n + leaf + b"}" * n


@pytest.mark.parametrize("n", [300, 900, 1020])
def test_deep_nesting_is_scrubbed_not_a_crash(tmp_path, n) -> None:
    """orjson parses up to 1024 levels; the walk, the verbatim check and the
    encoder used to die of RecursionError (scrub, report: internal error;
    record --redact: recording stopped)."""
    line = (b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":'
            + deep(n, b'{"password":"' + PW.encode() + b'","t":"' + GH.encode() + b'"}') + b"}}\n")
    src = record(tmp_path / "deep.jsonl", handshake() + [s2c(line), s2c(line.replace(b'"a":', b'"a" :'))])
    out = scrub_ok(src, tmp_path)
    assert_clean(out, PW, GH)
    html = tmp_path / "r.html"
    assert run("report", str(src), "-o", str(html)).exit_code == 0
    assert PW not in html.read_text()
    live = tmp_path / "live.jsonl"
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "--redact", "-q", "-o", str(live), "--", "cat"],
                       input=line, capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stdout == line and b"recording stopped" not in p.stderr, p.stderr
    assert_clean(live, PW, GH)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=30)


@given(json_values)
def test_encode_exact_is_the_compact_encoding(value) -> None:
    from mcptap.redact.verbatim import encode_exact

    want = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    got = encode_exact([value, 10**30])            # the big integer forces the exact (stack) encoder
    assert json.loads(got) == json.loads(b"[" + want + b"," + str(10**30).encode() + b"]")
    assert encode_exact(value) == orjson.dumps(value) if abs_ints_fit(value) else True


def abs_ints_fit(v: object) -> bool:
    if isinstance(v, bool):
        return True
    if isinstance(v, int):
        return -(2**63) <= v < 2**64
    if isinstance(v, list):
        return all(abs_ints_fit(x) for x in v)
    if isinstance(v, dict):
        return all(abs_ints_fit(x) for x in v.values())
    return True


@settings(max_examples=150, deadline=None)
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12) | st.sampled_from([GH, PW, "password=hunter22", SECRETS["jwt"]]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["password", "name", "token", "apiKey", "x", GH, "pin"]), inner, max_size=3), max_leaves=25))
@example(["-A", GH])                # a command line: one argv hit on the list, in both walks
@example({"x": [["--token", GH], "y"]})
def test_stack_walk_equals_recursive_walk(value) -> None:
    """From RECURSE_TO levels on the redactor walks with an explicit stack:
    same redacted value, same hits, in the same order, as the recursive walk."""
    import mcptap.redact.engine as engine
    from test_redact_engine import R

    def run_with(limit: int) -> tuple:
        old, engine.RECURSE_TO = engine.RECURSE_TO, limit
        try:
            out, hits = R.message({"jsonrpc": "2.0", "id": 1, "result": {"v": value, "l": [value]}})
        finally:
            engine.RECURSE_TO = old
        return out, [(h.path, h.rule, h.placeholder) for h in hits]

    recursive, stacked = run_with(10**6), run_with(0)
    assert stacked == recursive
