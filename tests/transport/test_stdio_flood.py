"""A flood through `mcptap record` with the recorder far behind: every byte
reaches the host and the capture (message, chunk and spilled chunk records),
`check` re-frames it into every message. The bounds are shrunk so the relay
process's spill file is used for sure; nothing here measures time."""

from __future__ import annotations

import hashlib
import itertools
import subprocess
import sys
from pathlib import Path

import orjson

from mcptap.capture.format import decode_bytes, message_from_record
from mcptap.capture.reader import read_capture

ROOT = Path(__file__).resolve().parents[2]
N = 50_000
NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"flood"}}\n'
SERVER = f"import sys; sys.stdin.buffer.read(); sys.stdout.buffer.write({NOTE!r} * {N}); sys.stdout.flush()"
SHRUNK = ("import mcptap.transport.copy_queue as rc, mcptap.transport.handoff as h, mcptap.transport.copy_reader as cr; "
          "rc.SPILL_BYTES = 0; cr.READER_PAUSE_BYTES = 0; h.SPILL_BYTES = 1 << 16; "
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
    # the spill file was named in the header and removed once the capture held its bytes
    assert c.header["spill"] == "cap.jsonl.spill" and not (tmp_path / "cap.jsonl.spill").exists()
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


KILLABLE = ("import mcptap.transport.copy_queue as rc, mcptap.transport.handoff as h, mcptap.transport.copy_reader as cr; "
            "rc.SPILL_BYTES = 0; cr.READER_PAUSE_BYTES = 0; "
            # analysis stuck: every forwarded byte past the copy pipe waits in the spill file
            "import time, mcptap.recorder as r; r.Recorder.stdio_bytes = lambda self, *a, **k: time.sleep(600); "
            "import sys; from mcptap.cli.main import main; sys.argv[0] = 'mcptap'; main()")


def test_sigkilled_tap_leaves_its_spill_file_and_recover_adds_it(tmp_path: Path) -> None:
    import os
    import signal
    import time

    cap = tmp_path / "cap.jsonl"
    server = f"import sys; sys.stdout.buffer.write({NOTE!r} * {N}); sys.stdout.flush(); sys.stdin.buffer.read()"
    p = subprocess.Popen([sys.executable, "-c", KILLABLE, "record", "-q", "-o", str(cap), "--", sys.executable, "-c", server],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
    assert p.stdout is not None
    got = b""
    while len(got) < len(NOTE) * N:              # forwarding never waits for the stuck analysis
        data = p.stdout.read1(1 << 20)
        assert data, "the tap ended early"
        got += data
    assert got == NOTE * N
    spill = tmp_path / "cap.jsonl.spill"
    for _ in range(500):                         # hang guard, not a timing assertion
        if spill.exists() and spill.stat().st_size > 0:
            break
        time.sleep(0.01)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(30)
    assert read_capture(str(cap)).end is None and spill.exists()
    rec = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "recover", str(cap)], capture_output=True, timeout=120, cwd=ROOT)
    assert rec.returncode == 0, rec.stderr
    assert b"added" in rec.stderr and not spill.exists()
    c = read_capture(str(cap))
    got_back = {}
    for r in c.records:
        if r["type"] == "chunk" and r["dir"] == "s2c":
            got_back[r["offset"]] = decode_bytes(r, "data") or b""
    assert got_back, "nothing was recovered"
    gaps = sum(r.get("bytes", 0) for r in c.records if r["type"] == "gap" and r.get("dir") == "s2c")
    for off, data in got_back.items():
        assert (NOTE * N)[off:off + len(data)] == data        # each recovered chunk is exactly what was forwarded there
    # everything recovered or counted as lost lies within what was forwarded; bytes read after
    # the last spilled chunk that only mcptap's memory held leave no trace anywhere (the relay
    # writes a copy to the pipe again once its queue is empty): the capture stays incomplete
    ranges = sorted((off, off + len(data)) for off, data in got_back.items())
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges)), "recovered chunks overlap"
    # the chunk records and the gap records (one before each recovered chunk that follows a hole)
    # tile the stream from its start to the end of the last chunk, within what was forwarded
    assert sum(map(len, got_back.values())) + gaps == ranges[-1][1] <= len(NOTE * N)
    check = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "check", "--format", "json", str(cap)],
                           capture_output=True, timeout=120, cwd=ROOT)
    report = orjson.loads(check.stdout)["captures"][0]
    assert not report["complete"] and report["messages"] > 0


TOKEN = "ghp_Zq3xY9w8V7u6T5s4R3q2P1o0N9m8L7k6J5i4"
#: analysis records its first reads, then is stuck: the capture ends in messages, the rest waits in the spill file
RECORDS_THEN_STUCK = ("import mcptap.transport.copy_queue as rc, mcptap.transport.handoff as h, mcptap.transport.copy_reader as cr; "
                      "rc.SPILL_BYTES = 0; cr.READER_PAUSE_BYTES = 0; "
                      "import time, mcptap.recorder as r; real = r.Recorder.stdio_bytes; n = [0]; "
                      "r.Recorder.stdio_bytes = lambda self, *a, **k: (n.__setitem__(0, n[0] + 1), "
                      "real(self, *a, **k) if n[0] <= 4 else time.sleep(600))[1]; "
                      "import sys; from mcptap.cli.main import main; sys.argv[0] = 'mcptap'; main()")


def test_recover_after_argv_secrets_were_replaced_holds_each_forwarded_byte_once(tmp_path: Path) -> None:
    """A server given its token on the command line echoes it in every message; the live tap
    records its messages with the placeholder (another length) and is SIGKILLed. ``recover --
    CMD`` adds the spill's bytes: the messages, the chunks and the gaps, by where their bytes were
    forwarded (``original`` where the placeholder resized them), tile the stream, none twice."""
    import os
    import signal
    import time

    note = NOTE.replace(b"flood", TOKEN.encode())
    cap = tmp_path / "cap.jsonl"
    server = ["-c", f"import sys; sys.stdout.buffer.write({note!r} * {N}); sys.stdout.flush(); sys.stdin.buffer.read()",
              "--token", TOKEN]
    p = subprocess.Popen([sys.executable, "-c", RECORDS_THEN_STUCK, "record", "-q", "-o", str(cap), "--", sys.executable, *server],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
    assert p.stdout is not None
    got = 0
    while got < len(note) * N:
        data = p.stdout.read1(1 << 20)
        assert data, "the tap ended early"
        got += len(data)
    spill = tmp_path / "cap.jsonl.spill"
    for _ in range(3000):                        # hang guard, not a timing assertion
        if spill.exists() and spill.stat().st_size > 0 and any(r["type"] == "message" for r in read_capture(str(cap)).records):
            break
        time.sleep(0.01)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(30)
    assert spill.exists()
    rec = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "recover", str(cap), "--", sys.executable, *server],
                         capture_output=True, timeout=120, cwd=ROOT)
    assert rec.returncode == 0, rec.stderr
    c = read_capture(str(cap))
    assert TOKEN.encode() not in cap.read_bytes()
    stream, mark = note * N, c.header["target"]["argv"][-1].encode()
    assert mark != TOKEN.encode() and len(mark) != len(TOKEN)
    spans = []
    for r in c.records:
        if r.get("dir") != "s2c" or r["type"] not in ("message", "chunk", "gap"):
            continue
        if r["type"] == "gap":
            if r.get("bytes"):
                spans.append(("gap", spans[-1][2] if spans else 0, (spans[-1][2] if spans else 0) + r["bytes"]))
            continue
        held = decode_bytes(r, "data") if r["type"] == "chunk" else message_from_record(r).raw
        src = r.get("original") or {"offset": r["offset"], "bytes": len(held)}
        spans.append((r["type"], src["offset"], src["offset"] + src["bytes"]))
        assert held == stream[spans[-1][1]:spans[-1][2]].replace(TOKEN.encode(), mark), spans[-1]   # those bytes, secret replaced
    assert any(t == "message" for t, _, _ in spans) and any(t == "chunk" for t, _, _ in spans)
    assert spans[0][1] == 0 and all(a[2] == b[1] for a, b in itertools.pairwise(spans)), \
        [s for s in itertools.pairwise(spans) if s[0][2] != s[1][1]][:3]        # no byte twice, none skipped
    assert spans[-1][2] <= len(note) * N
