"""A host's normal shutdown while mcptap's analysis is far behind.

The official SDK stdio client closes the server's stdin, waits 2 s, then
SIGTERMs the process group and SIGKILLs it 2 s later. Analysis is made slow
here on purpose (each annotated chunk takes 0.25 s, a loaded machine in
miniature), so the SIGTERM arrives while mcptap still records: it must then
store the rest unframed (``chunk`` records) and write its end record before
the SIGKILL, so the capture is complete and ``check`` finds every message.
Nothing here measures time: the slow analysis only makes sure the signal
comes while work is left.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import orjson
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import read_capture
from sdk_scenario import EXPECTED, drive

pytestmark = pytest.mark.e2e
HERE = Path(__file__).parent
ROOT = HERE.parents[1]

SLOW = ("import time, mcptap.recorder as r; slow = r.Recorder.stdio_bytes\n"
        "def stdio_bytes(self, *a, **k):\n    time.sleep(0.25)\n    return slow(self, *a, **k)\n"
        "r.Recorder.stdio_bytes = stdio_bytes\n"
        "import sys; from mcptap.cli.main import main; sys.argv[0] = 'mcptap'; main()")


async def test_sigterm_from_the_sdk_client_still_yields_a_complete_capture(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    params = StdioServerParameters(command=sys.executable, cwd=str(ROOT), args=[
        "-c", SLOW, "record", "--quiet", "-o", str(cap), "--", sys.executable, str(HERE / "sdk_server.py")])
    async with Client(params, mode="legacy") as client:
        got, _ = await drive(client)
    assert got == EXPECTED
    c = read_capture(str(cap))
    assert c.end is not None and not c.truncated, "the end record must be written before the host's SIGKILL"
    kinds = {r["type"] for r in c.records}
    assert "chunk" in kinds, "the SIGTERM came after the analysis caught up: the test did not exercise the hurry path"
    streams = {"c2s": b"", "s2c": b""}
    for r in c.records:
        if r["type"] == "chunk":
            streams[r["dir"]] += decode_bytes(r, "data") or b""
        elif r["type"] == "message":
            raw = decode_bytes(r, "raw")
            streams[r["dir"]] += raw if raw is not None else orjson.dumps(r["json"]) + r.get("eol", "\n").encode()
    for d, data in streams.items():
        assert c.end[d]["bytes"] == len(data) > 0 and c.end[d]["sha256"] == hashlib.sha256(data).hexdigest()
    import subprocess

    check = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "check", "--format", "json", str(cap)],
                           capture_output=True, timeout=120, cwd=ROOT)
    report = orjson.loads(check.stdout)["captures"][0]
    assert report["complete"]
    assert report["findings"]["error"] == 0, report["codes"]
