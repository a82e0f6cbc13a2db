"""Capture format v1: round trip, frozen samples, damaged files, permissions."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcptap.capture.format import message_from_record, message_record
from mcptap.capture.reader import CaptureStream, read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.errors import CaptureReadError
from mcptap.model import UNPARSED, Direction, Kind, Message

DATA = Path(__file__).parent / "data"


def test_frozen_v1_sample_still_loads() -> None:
    cap = read_capture(str(DATA / "capture-v1-sample.jsonl"))
    assert cap.header["version"] == 1 and cap.end is not None and not cap.truncated
    msgs = cap.messages()
    assert [m.method for m in msgs if m.kind is Kind.REQUEST][:2] == ["initialize", "tools/call"]
    # the response to the cancelled request 21 is paired and flagged
    late = next(m for m in msgs if m.id == 21 and m.kind is Kind.ERROR)
    assert late.pair is not None and "jsonrpc.response_after_cancel" in late.codes


def _msg(raw: bytes, value) -> Message:
    return Message(seq=1, t_us=5, direction=Direction.S2C, raw=raw, value=value, kind=Kind.RESPONSE)


@pytest.mark.parametrize("raw", [
    b'{"jsonrpc":"2.0","id":1,"result":{}}\n',          # canonical: json only
    b'{"jsonrpc": "2.0", "id": 1, "result": {}}\n',     # spaces: raw kept
    b'{"jsonrpc":"2.0","id":1,"result":{}}\r\n',        # CRLF
    b'{"x":"\xe9"}\n',                                  # invalid UTF-8: base64
    b"banner\n",
    b'{"v":1.0}\n',                                     # float formatting differs
])
def test_message_record_round_trips_exact_bytes(raw: bytes) -> None:
    from mcptap.protocol.framing import parse_json

    value, _ = parse_json(raw)
    rec = orjson.loads(orjson.dumps(message_record(_msg(raw, value))))
    assert message_from_record(rec).raw == raw
    if raw == b'{"jsonrpc":"2.0","id":1,"result":{}}\n':
        assert "raw" not in rec and "raw_b64" not in rec
    if raw.startswith(b'{"x"'):
        assert "raw_b64" in rec


def _write(path: Path, n: int = 3) -> None:
    w = CaptureWriter.open(str(path))
    w.write({"type": "header", "format": "mcptap-capture", "version": 1, "mcptap": "t", "started": "2026-01-01T00:00:00Z", "transport": "stdio", "target": {}})
    for i in range(n):
        w.write(message_record(_msg(b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % i, {"jsonrpc": "2.0", "id": i, "result": {}})))
    w.close()


def test_capture_files_are_owner_only(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    _write(p)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600


def test_truncated_last_line_is_accepted_and_reported(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    _write(p)
    data = p.read_bytes()
    p.write_bytes(data[:-10])
    cap = read_capture(str(p))
    assert cap.truncated and len(cap.records) == 2 and cap.end is None


def test_corrupt_middle_line_is_an_error_naming_the_line(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    _write(p)
    lines = p.read_bytes().split(b"\n")
    lines[2] = b"{garbage"
    p.write_bytes(b"\n".join(lines))
    with pytest.raises(CaptureReadError, match=r"c.jsonl:3"):
        read_capture(str(p))


@pytest.mark.parametrize("content,match", [
    (b"", "empty"),
    (b"hello\n", "not an mcptap capture"),
    (b'{"type":"header","format":"mcptap-capture","version":99}\n', "version 99 is not supported"),
])
def test_not_a_capture(tmp_path: Path, content: bytes, match: str) -> None:
    p = tmp_path / "c.jsonl"
    p.write_bytes(content)
    with pytest.raises(CaptureReadError, match=match):
        CaptureStream(str(p))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CaptureReadError, match="cannot open"):
        read_capture(str(tmp_path / "nope.jsonl"))


def test_disk_full_never_raises_into_the_relay(tmp_path: Path) -> None:
    fd = os.open("/dev/full", os.O_WRONLY)
    w = CaptureWriter(fd, "/dev/full")
    w.write({"type": "x"})
    w.flush()
    w.write({"type": "y"})
    w.flush()
    assert w.failed and w.dropped == 2
    w.close()


def test_writes_resume_after_a_failure_with_a_gap_record(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    w = CaptureWriter.open(str(p))
    w.write({"type": "header", "format": "mcptap-capture", "version": 1})
    w.flush()
    real = w._fd
    w._fd = os.open("/dev/full", os.O_WRONLY)       # the disk fills up
    w.write({"type": "message", "seq": 1})
    w.write({"type": "message", "seq": 2})
    w.flush()
    os.close(w._fd)
    w._fd = real                                     # space again
    w.write({"type": "end", "seq": 3})
    w.close()
    recs = [orjson.loads(x) for x in p.read_bytes().splitlines()]
    assert [r["type"] for r in recs] == ["header", "gap", "end"]
    assert recs[1]["dropped_records"] == 2 and "No space" in recs[1]["reason"]


def test_unparsed_value_is_stored_as_raw() -> None:
    rec = message_record(_msg(b"not json\n", UNPARSED))
    assert rec["raw"] == "not json\n" and "json" not in rec


@pytest.mark.parametrize("bad,why", [
    ('{"type":"message","seq":3,"dir":"c2s","t_us":5,"kind":"request","raw":5}', "raw is an integer"),
    ('{"type":"message","seq":3,"dir":"c2s","t_us":"abc","kind":"request","raw":"x"}', "t_us 'abc'"),
    ('{"type":"message","seq":"x"}', "seq 'x'"),
    ('{"type":"message","seq":3,"dir":"up","t_us":1,"kind":"request","raw":"x"}', "dir 'up'"),
    ('{"type":"message","seq":3,"dir":"c2s","t_us":1,"kind":"request","raw_b64":"!!!"}', "not base64"),
    ('{"type":"message","seq":3,"dir":"c2s","t_us":null,"kind":"request","json":{}}', "without t_us"),
    ('{"type":"message","seq":3,"dir":"s2c","t_us":1,"kind":"response","pair":2,"latency_us":"","json":{}}', "latency_us '' is not"),
    ('{"type":"message","seq":3,"dir":"s2c","t_us":1,"kind":"response","pair":[],"json":{}}', "pair \\[\\] is not"),
    ('{"type":"message","seq":3,"dir":"s2c","t_us":1,"kind":"response","rev":[],"json":{}}', "rev is a list"),
    ('{"type":"message","seq":3,"dir":{},"t_us":1,"kind":"request","json":{}}', "dir {}"),
    ('{"type":"message","seq":3,"dir":["c2s"],"t_us":1,"kind":"request","json":{}}', "dir \\['c2s'\\]"),
    # an integer literal beyond 64 bits (orjson reads it as a float): said as such, not as "1.8446744073709552e+19"
    ('{"type":"message","seq":3,"dir":"c2s","t_us":18446744073709551616,"kind":"request","json":{}}', "t_us is beyond 64 bits \\(1.845e\\+19\\)$"),
    ('{"type":"message","seq":340282366920938463463374607431768211456,"dir":"c2s","t_us":1,"kind":"request","json":{}}',
     "seq is beyond 64 bits \\(3.403e\\+38\\)$"),
])
def test_corrupt_field_types_name_file_and_line(tmp_path: Path, bad: str, why: str) -> None:
    p = tmp_path / "c.jsonl"
    _write(p)
    lines = p.read_bytes().split(b"\n")
    lines.insert(2, bad.encode())
    p.write_bytes(b"\n".join(lines))
    with pytest.raises(CaptureReadError, match=rf"c.jsonl:3: corrupt message record: .*{why}"):
        read_capture(str(p))


def test_record_types_are_the_documented_ones_and_only_records_builds_them() -> None:
    """records.RECORD_TYPES and the sections of docs/capture-format.md are the
    same list, each type has its class, and no module outside mcptap/records/
    builds a record as a dict literal (``{"type": "gap", …}``): the typed
    classes own every record's JSON."""
    import ast
    import re
    from pathlib import Path

    from mcptap.records import _CLASSES, RECORD_TYPES

    root = Path(__file__).resolve().parents[1]
    doc = (root / "docs" / "capture-format.md").read_text()
    assert tuple(re.findall(r"^## (\w+)", doc, re.M)[:len(RECORD_TYPES)]) == RECORD_TYPES
    assert tuple(_CLASSES) == RECORD_TYPES
    built = []
    for path in (root / "mcptap").rglob("*.py"):
        if path.parent.name == "records":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "type" and isinstance(v, ast.Constant)
                                                  and v.value in RECORD_TYPES for k, v in zip(node.keys, node.values, strict=True)):
                built.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not built, f"record dicts built outside mcptap/records/: {built}"


@pytest.mark.parametrize("bad,why", [
    ('{"type":"message","seq":3,"dir":"c2s","t_us":null,"kind":"request","json":{"jsonrpc":"2.0","id":9,"method":"ping"}}', "without t_us"),
    ('{"type":"message","seq":3,"dir":{},"t_us":1,"kind":"request","json":{"jsonrpc":"2.0","id":9,"method":"ping"}}', "dir {}"),
])
def test_check_and_export_name_a_corrupt_field_not_a_traceback(tmp_path: Path, bad: str, why: str) -> None:
    """A hand-edited capture with a field of the wrong type: `check` (its fast
    scan too) and `export` say which line, exit 2, and show no traceback."""
    import subprocess
    import sys

    from scripted import c2s, handshake, record, req, res, s2c

    # recorded under today's rules: check reuses the annotations (its fast scan)
    p = record(tmp_path / "c.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    lines = p.read_bytes().split(b"\n")
    lines.insert(2, bad.encode())
    p.write_bytes(b"\n".join(lines))
    for args in (["check", str(p)], ["check", "--full", str(p)], ["export", str(p), "-f", "otlp-json"]):
        proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", *args], capture_output=True, text=True, timeout=60)
        assert "Traceback" not in proc.stderr, (args, proc.stderr)
        assert proc.returncode == 2 and why in proc.stderr, (args, proc.stderr)


@pytest.mark.parametrize(("edit", "where", "why"), [
    (lambda lines: lines + [b"\n"], "{n}", "a blank line"),                         # a trailing blank line
    (lambda lines: lines[:3] + [b"\n"] + lines[3:], "4", "a blank line"),
    (lambda lines: [b"\xef\xbb\xbf" + lines[0]] + lines[1:], "1", "byte-order mark"),
])
def test_an_editor_resaved_capture_is_refused_saying_so(tmp_path: Path, edit: Any, where: str, why: str) -> None:
    """The writer never writes a BOM or a blank line: a capture that has one
    was re-saved by an editor, and the error says that at the exact line."""
    lines = (Path(__file__).parents[1] / "captures" / "clean-2025-06-18.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "edited.jsonl"
    path.write_bytes(b"".join(edit(lines)))
    with pytest.raises(CaptureReadError) as exc:
        read_capture(str(path))
    assert f"edited.jsonl:{where.format(n=len(lines) + 1)}:" in str(exc.value)
    assert why in str(exc.value) and "re-saved by an editor" in str(exc.value)
