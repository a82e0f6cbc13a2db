"""`mcptap record --upstream` against an upstream that sends faster than the
recorder process can record (transport/http_recorder*.py, protocol/sse.py):
an SSE data line that never ends, endless events, endless `100 Continue`.
The recorder process's peak memory stays bounded, the capture stays bounded,
and SIGTERM ends the tap within seconds with an end record (a gap record
says what a backlog left out)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mcptap.capture.reader import read_capture

CMD = [sys.executable, "-m", "mcptap.cli.record_http"]
RSS_BOUND_KB = 200 << 10      # the recorder's own event cap is 128 MiB; its idle size ~25 MiB
FLOOD_S = 2.5


def _chunk(b: bytes) -> bytes:
    return b"%x\r\n" % len(b) + b + b"\r\n"


def _serve(srv: socket.socket, mode: str) -> None:
    """Answer every request with ``mode``'s flood until the peer goes."""
    while True:
        try:
            c, _ = srv.accept()
        except OSError:
            return
        threading.Thread(target=_flood, args=(c, mode), daemon=True).start()


def _flood(c: socket.socket, mode: str) -> None:
    with c:
        try:
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += c.recv(65536)
            if mode == "continue":
                while True:
                    c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n" * 64)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            if mode == "line":
                c.sendall(_chunk(b'data: {"jsonrpc":"2.0","id":1,"result":{"x":"'))
                piece = _chunk(b"A" * 65536)
            else:
                ev = b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"' + b"x" * 900 + b'"}}\n\n'
                piece = _chunk(ev * 64)
            while True:
                c.sendall(piece)
        except OSError:
            pass


def _hwm_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


@pytest.mark.parametrize("mode", ["line", "events", "continue"])
def test_a_flooding_upstream_keeps_the_recorder_bounded_and_sigterm_prompt(tmp_path: Path, mode: str) -> None:
    srv = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=_serve, args=(srv, mode), daemon=True).start()
    cap = tmp_path / "c.jsonl"
    proc = subprocess.Popen(CMD + ["--upstream", f"http://127.0.0.1:{srv.getsockname()[1]}/mcp", "-o", str(cap)],
                            stderr=subprocess.PIPE, text=True)
    peak = [0]
    stop = threading.Event()

    def watch() -> None:
        # the tap's child processes' peak RSS, until the tap exits
        while not stop.is_set():
            try:
                with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
                    kids = [int(x) for x in f.read().split()]
            except OSError:
                kids = []
            for k in kids:
                peak[0] = max(peak[0], _hwm_kb(k))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        assert proc.stderr is not None
        url = proc.stderr.readline().split()[3]
        authority = url.split("/")[2]
        host, port = authority.split(":")
        body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}'
        with socket.create_connection((host, int(port))) as cl:
            cl.sendall(b"POST /mcp HTTP/1.1\r\nHost: " + authority.encode() + b"\r\nContent-Type: application/json\r\n"
                       b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            cl.settimeout(0.5)
            end = time.monotonic() + FLOOD_S
            # the endless line must pass the recorder's event cap, however slowly a loaded machine relays it
            least = 160 << 20 if mode == "line" else 0
            guard = end + 120
            got = 0
            while (time.monotonic() < end or got < least) and time.monotonic() < guard:
                try:
                    d = cl.recv(1 << 20)
                except TimeoutError:
                    continue
                if not d:
                    break
                got += len(d)
        assert got > 0
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(12)
        except subprocess.TimeoutExpired:
            rc = None
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            for k in open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split():
                os.kill(int(k), signal.SIGKILL)
            proc.kill()
            proc.wait()
        stop.set()
        watcher.join()
        srv.close()
    err = proc.stderr.read() if proc.stderr else ""
    assert rc == 0 and took < 8, (rc, took, err)
    assert 0 < peak[0] < RSS_BOUND_KB, f"recorder peak RSS {peak[0] >> 10} MiB"
    c = read_capture(str(cap))
    assert c.end is not None
    codes = [f["code"] for r in c.records for f in r.get("findings") or []]
    if mode == "line":
        ev, *cut = [r for r in c.records if r.get("event") == "sse"]
        assert ev["sse"]["dropped"] > 100 << 20 and ev["sse"]["terminated"] is False
        assert "sse.event_too_large" in codes
        # past the spill bound (1 GiB when the disk has room) holes cut the endless event: each piece is said so
        assert all(r["sse"]["cut"] == "gap" for r in cut) and (not cut or ev["sse"]["cut"] == "gap")
    if mode == "continue":
        assert sum(1 for r in c.records if r.get("informational")) == 21
        assert codes.count("http.informational_flood") == 1
        assert cap.stat().st_size < 1 << 20
    # what a backlog left out at the end is said in the capture, never silently missing
    if "left out" in err:
        assert any(r["type"] == "gap" for r in c.records)
