"""A flood through `mcptap record` with the recorder far behind: every byte
reaches the host and the capture (message, chunk and spilled chunk records),
`check` re-frames it into every message. The bounds are shrunk so the relay
process's spill file is used for sure; nothing here measures time."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import orjson

from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import read_capture

ROOT = Path(__file__).resolve().parents[2]
N = 50_000
NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"flood"}}\n'
SERVER = f"import sys; sys.stdin.buffer.read(); sys.stdout.buffer.write({NOTE!r} * {N}); sys.stdout.flush()"
SHRUNK = ("import mcptap.transport.relay_child as rc, mcptap.transport.handoff as h; "
          "rc.SPILL_BYTES = 0; h.READER_PAUSE_BYTES = 0; h.SPILL_BYTES = 1 << 16; "
          # analysis made slow, so it is behind on any machine (the session's end raises its priority)
          "import time, mcptap.recorder as r; slow = r.Recorder.stdio_bytes; "
          "r.Recorder.stdio_bytes = lambda self, *a, **k: (time.sleep(0.05), slow(self, *a, **k))[1]; "
          "import sys; from mcptap.cli.main import main; sys.argv[0] = 'mcptap'; main()")


def test_flood_with_the_recorder_behind_loses_nothing(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    hello = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    p = subprocess.run([sys.executable, "-c", SHRUNK, "record", "-q", "-o", str(cap), "--", sys.executable, "-c", SERVER],
                       input=hello, capture_output=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert p.stdout == NOTE * N
    c = read_capture(str(cap))
    stream = {"c2s": b"", "s2c": b""}
    for r in c.records:
        if r["type"] == "chunk":
            stream[r["dir"]] += decode_bytes(r, "data") or b""
        elif r["type"] == "message":
            raw = decode_bytes(r, "raw")
            stream[r["dir"]] += raw if raw is not None else orjson.dumps(r["json"]) + r.get("eol", "\n").encode()
    assert stream == {"c2s": hello, "s2c": NOTE * N}
    assert c.end is not None and c.end["s2c"]["sha256"] == hashlib.sha256(NOTE * N).hexdigest()
    assert c.end.get("chunks", {}).get("records", 0) > 0
    check = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "check", "--format", "json", str(cap)],
                           capture_output=True, timeout=120, cwd=ROOT)
    report = orjson.loads(check.stdout)["captures"][0]
    codes = {c["code"] for c in report["codes"]}
    assert report["messages"] == N + 1 and report["complete"]
    # the recorder being behind is not the server's doing: no digest or order
    # problem, and stdout was seen closed when it closed (not when the copy caught up)
    assert not codes & {"capture.digest_mismatch", "capture.out_of_sequence", "process.exited_but_stdout_open", "capture.gap"}, codes


def test_host_flood_c2s_with_the_recorder_behind_is_stored_the_same_way(tmp_path: Path) -> None:
    """The same on the host's side: stdin flooded while analysis is behind."""
    cap = tmp_path / "cap.jsonl"
    bye = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"bye"}}\n'
    server = f"import sys; n = sys.stdin.buffer.read().count(b'\\n'); sys.stdout.buffer.write({bye!r}); sys.exit(0 if n == {N} else 3)"
    p = subprocess.run([sys.executable, "-c", SHRUNK, "record", "-q", "-o", str(cap), "--", sys.executable, "-c", server],
                       input=NOTE * N, capture_output=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert p.stdout == bye
    c = read_capture(str(cap))
    c2s = b"".join((decode_bytes(r, "data") or b"") if r["type"] == "chunk" else
                   (decode_bytes(r, "raw") or orjson.dumps(r["json"]) + r.get("eol", "\n").encode())
                   for r in c.records if r["type"] in ("chunk", "message") and r["dir"] == "c2s")
    assert c2s == NOTE * N
    assert any(r["type"] == "chunk" and r["dir"] == "c2s" for r in c.records)
    assert c.end is not None and c.end["c2s"]["sha256"] == hashlib.sha256(NOTE * N).hexdigest()
    check = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "check", "--format", "json", str(cap)],
                           capture_output=True, timeout=120, cwd=ROOT)
    report = orjson.loads(check.stdout)["captures"][0]
    assert report["messages"] == N + 1 and report["complete"]
