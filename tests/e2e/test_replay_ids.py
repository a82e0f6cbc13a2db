"""Replay sends each request with its recorded id (null, 1.5, true, an
object, a number beyond any double…), so the official-SDK server
(tests/replay/sdk_server.py) sees what it saw when recorded: requests it left
unanswered then are unanswered again (it drops ids that are not an int or a
string), and the replay of an unchanged server passes. Replacing them with
fresh integer ids made it answer them: NEW, exit 1, a change replay made."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from mcptap.capture.reader import read_capture

pytestmark = pytest.mark.e2e
SERVER = [sys.executable, str(Path(__file__).resolve().parents[1] / "replay" / "sdk_server.py"), "v1"]
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
#: (1E+400 and 0.30000000000000001: numbers orjson writes otherwise, as 1e400 and 0.3, sent as recorded)
ODD_IDS = [b"null", b"1.5", b"true", b'{"a":1}', b"[1]", b"1E+400", b"-1e400", b"18446744073709551617", b"0.30000000000000001"]


def _record(path: Path) -> None:
    """Handshake, then tools/list under each odd id, then a ping the client waits for."""
    proc = subprocess.Popen([*MCPTAP, "record", "-q", "-o", str(path), "--", *SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None

    def send(line: bytes) -> None:
        assert proc.stdin is not None
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()

    send(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},'
         b'"clientInfo":{"name":"h","version":"1"}}}')
    assert orjson.loads(proc.stdout.readline())["id"] == 1
    send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    for i in ODD_IDS:
        send(b'{"jsonrpc":"2.0","id":%s,"method":"tools/list"}' % i)
    send(b'{"jsonrpc":"2.0","id":"last","method":"ping"}')
    answers = [orjson.loads(proc.stdout.readline()) for _ in range(2)]
    assert answers[-1]["id"] == "last", answers        # (a number beyond 64 bits is answered; the others are dropped)
    proc.stdin.close()
    assert proc.wait(30) == 0


def _sent_ids(path: Path) -> list[bytes]:
    out = []
    for r in read_capture(str(path)).records:
        if r.get("type") == "message" and r["dir"] == "c2s" and r.get("kind") == "request" and r.get("method") == "tools/list":
            raw = r["raw"].encode() if "raw" in r else orjson.dumps(r["json"])
            out.append(raw.split(b'"id":', 1)[1].rsplit(b',"method"', 1)[0])
    return out


def test_requests_are_sent_with_their_recorded_ids(tmp_path: Path) -> None:
    cap, new = tmp_path / "ids.jsonl", tmp_path / "new.jsonl"
    _record(cap)
    assert _sent_ids(cap) == ODD_IDS
    proc = subprocess.run([*MCPTAP, "replay", str(cap), "-o", str(new), "--format", "json", "--timeout", "5", "--", *SERVER],
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stdout.decode()[-3000:] + proc.stderr.decode()[-2000:]
    assert {r["status"] for r in orjson.loads(proc.stdout)["exchanges"]} == {"MATCH"}
    assert _sent_ids(new) == ODD_IDS


#: numbers orjson writes as other numbers: beyond any double (as null), below the smallest (0.0), more digits than a double holds
LOSSY = b'{"x":1e400,"y":-1E+400,"z":0.30000000000000001,"w":1e-400,"v":18446744073709551617,"u":1.5}'


def test_numbers_orjson_cannot_write_are_sent_as_recorded(tmp_path: Path) -> None:
    """A request's params holding 1e400 (beside a number below the smallest double,
    one with more digits than a double holds and one beyond 64 bits): replay sent
    1e400 as null (and the others as 0.0 and 0.3), where the id path already wrote
    its 1e400 again; each such number is now sent as its recorded literal."""
    cap, new = tmp_path / "lossy.jsonl", tmp_path / "new.jsonl"
    proc = subprocess.Popen([*MCPTAP, "record", "-q", "-o", str(cap), "--", *SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    call = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2},"_meta":%s}}' % LOSSY
    for line in (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},'
                 b'"clientInfo":{"name":"h","version":"1"}}}', b'{"jsonrpc":"2.0","method":"notifications/initialized"}', call,
                 b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1e400,"progress":1e400}}'):
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()
        if b'"id"' in line:
            assert b'"result"' in proc.stdout.readline()
    proc.stdin.close()
    assert proc.wait(30) == 0
    p = subprocess.run([*MCPTAP, "replay", str(cap), "-o", str(new), "--format", "json", "--timeout", "5", "--allow-side-effects", "--", *SERVER],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stdout.decode()[-3000:] + p.stderr.decode()[-2000:]
    assert {r["status"] for r in orjson.loads(p.stdout)["exchanges"]} == {"MATCH"}
    sent = [r["raw"].encode() for r in read_capture(str(new)).records if r.get("type") == "message" and r["dir"] == "c2s" and "raw" in r]
    assert call + b"\n" in sent, sent
    assert b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1e400,"progress":1e400}}\n' in sent, sent
