"""Every stdio case through the REAL relay: `mcptap record -- script_peer.py`.

The host side (this test) writes each c2s chunk and reads each s2c chunk in the
case's order; the server side (script_peer.py) checks the c2s bytes it gets and
writes the s2c bytes. Both directions must arrive byte-identical, the exit code
must propagate, and the capture must carry the case's expected findings.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from casefiles import CASES, Wire, wires
from mcptap.capture.format import message_from_record
from mcptap.capture.reader import read_capture
from mcptap.check.reannotated import Reannotated

STDIO = wires("stdio")
HERE = Path(__file__).parent
pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not STDIO, reason=f"handed cases not found at {CASES}")]


def run_case(w: Wire, capture: Path) -> tuple[bytes, bytes, int]:
    case_dir = next(d for d in CASES.iterdir() if d.name.startswith(w.case + "-"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcptap.cli.main", "record", "--quiet", "--grace", "2", "-o", str(capture), "--",
         sys.executable, str(HERE / "script_peer.py"), str(case_dir), w.name],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    err = bytearray()
    t = threading.Thread(target=lambda: err.extend(proc.stderr.read()), daemon=True)
    t.start()
    got = bytearray()
    for e in w.events:
        if e.kind == "bytes" and e.dir == "c2s":
            proc.stdin.write(e.data)
            proc.stdin.flush()
        elif e.kind == "bytes" and e.dir == "s2c":
            want = len(e.data)
            while want:
                chunk = os.read(proc.stdout.fileno(), want)
                if not chunk:
                    break
                got += chunk
                want -= len(chunk)
    proc.stdin.close()
    got += proc.stdout.read()
    code = proc.wait(timeout=30)
    t.join(5)
    return bytes(got), bytes(err), code


@pytest.mark.parametrize("w", STDIO, ids=lambda w: f"{w.case}-{w.name}")
def test_case_through_real_relay(w: Wire, tmp_path: Path) -> None:
    cap_path = tmp_path / "cap.jsonl"
    s2c, err, code = run_case(w, cap_path)
    assert s2c == w.stream("s2c"), "server→host bytes must be relayed byte-identical"
    want_err = b"".join(e.data for e in w.events if e.kind == "bytes" and e.dir == "err")
    assert want_err in err, "server stderr must pass through unchanged"
    exit_ev = [e for e in w.events if e.kind == "exit"]
    assert code == (exit_ev[0].raw.get("code", 0) if exit_ev else 0), err.decode(errors="replace")[-500:]
    cap = read_capture(str(cap_path))
    assert cap.end is not None
    # when analysis falls behind (a large message on a loaded machine) the recorder stores
    # exact bytes as chunk records; check/show frame and annotate them: judge what they see
    records = list(Reannotated.open(str(cap_path)))
    msgs = [r for r in records if r["type"] == "message"]
    for d in ("c2s", "s2c"):
        assert b"".join(message_from_record(r).raw for r in msgs if r["dir"] == d) == w.stream(d)
    codes = {(f["code"], f["severity"]) for r in records for f in r.get("findings", ())}
    for a in w.annotations:
        if a["code"] != "(no finding)" and not w.context:
            assert (a["code"], a["severity"]) in codes, f"{a['code']} missing ({a['why']})"
