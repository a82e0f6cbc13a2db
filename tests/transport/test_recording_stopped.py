"""Recording stopped after an internal error (the relay goes on): every tap
says so the same way, a ``gap`` record for the rest and the end record's
``recorder_error``, so ``mcptap ls`` lists the capture incomplete with the
error ``check`` reports. The HTTP tap's observer used to stop with a line on
stderr only: its capture was listed complete."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from mcptap.capture.reader import read_capture
from mcptap.relay.http.observe import HttpObserver
from tests.test_end_gap_counts import ls_and_check
from tests.transport.test_http_recorder import _start
from tests.transport.test_http_tap import post, tap, upstream_server

ROOT = Path(__file__).resolve().parents[2]


def _says_it_stopped(path: Path) -> dict[str, Any]:
    """The capture's end record, once asserted to say recording stopped as every tap says it."""
    cap = read_capture(str(path))
    assert cap.end is not None and cap.end.get("recorder_error"), cap.end
    assert any(r["type"] == "gap" and r["reason"].startswith("recorder failed: ") for r in cap.records)
    info, report = ls_and_check(path)
    assert info["status"] == "incomplete"
    assert info["severities"].get("error", 0) == report["findings"]["error"] >= 1, (info, report["findings"])
    return cap.end


async def test_the_in_process_http_observer_failing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = HttpObserver.handle
    calls = [0]

    def handle(self: HttpObserver, items: list[Any], flush: bool = True) -> None:
        calls[0] += 1
        if calls[0] == 3:
            raise RuntimeError("boom")
        real(self, items, flush)

    monkeypatch.setattr(HttpObserver, "handle", handle)
    async with upstream_server() as port:
        async with tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp") as (url, rec):
            for i in range(3):
                st, _ = await post(url, {"jsonrpc": "2.0", "id": i, "method": "ping"})
                assert st == 200                     # the relay goes on
            with trio.fail_after(60):                # hang guard: the relay observes after forwarding
                while calls[0] < 3:
                    await trio.sleep(0.01)
    assert _says_it_stopped(tmp_path / "cap.jsonl")["recorder_error"] == "RuntimeError('boom')"


def test_the_http_recorder_process_failing(tmp_path: Path) -> None:
    link, said, _ = _start(tmp_path, boom_at=2)
    for i in range(5):
        link.handle(_client(i))
    for _ in range(2000):                            # hang guard: until the recorder process said it stopped
        link._read_status_once()
        if said:
            break
        time.sleep(0.01)
    link.finish(0)
    assert said == ["recording stopped after an internal error: RuntimeError('boom') (the relay goes on)"]
    assert _says_it_stopped(tmp_path / "c.jsonl")["recorder_error"] == "RuntimeError('boom')"


def _client(i: int) -> list[Any]:
    from mcptap.relay.http import events as r

    return [r.SendClient(1, str(i).encode())]


#: ``mcptap record`` whose recorder raises on the second chunk it records (a bug in mcptap)
BOOM = ("import mcptap.recorder as r\n"
        "real = r.Recorder.stdio_bytes\n"
        "calls = [0]\n"
        "def boom(self, *a, **k):\n"
        "    calls[0] += 1\n"
        "    if calls[0] == 2: raise RuntimeError('boom')\n"
        "    return real(self, *a, **k)\n"
        "r.Recorder.stdio_bytes = boom\n"
        "import sys; from mcptap.cli.main import main; sys.argv[0] = 'mcptap'; main()")
#: answers each request line with an empty result
SERVER = ("import json, sys\n"
          "for line in sys.stdin:\n"
          "    sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': json.loads(line)['id'], 'result': {}}) + '\\n'); sys.stdout.flush()\n")


def test_the_stdio_recorder_failing(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    lines = b"".join(orjson.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}) + b"\n" for i in range(4))
    p = subprocess.run([sys.executable, "-c", BOOM, "record", "-o", str(cap), "--", sys.executable, "-c", SERVER],
                       input=lines, capture_output=True, timeout=120, cwd=ROOT, env={**os.environ})
    assert p.stdout.count(b'"result"') == 4, p           # the relay goes on
    assert b"recording stopped" in p.stderr, p.stderr
    assert _says_it_stopped(cap)["recorder_error"] == "RuntimeError: boom"
