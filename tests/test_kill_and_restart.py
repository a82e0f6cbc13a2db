"""Faults around the tap (issue 9, "how it must be shown"): ``kill -9`` of
mcptap leaves a capture every reader accepts, holding a byte-exact prefix of
what was relayed; an upstream that goes away and comes back is answered with
502 meanwhile and served again after, by the same tap."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import trio

from mcptap.capture.format import message_from_record
from mcptap.capture.reader import read_capture
from tests.transport.test_http_tap import fake_mcp, post, tap

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
ECHO = "import sys\nfor line in sys.stdin: sys.stdout.write(line); sys.stdout.flush()"


def _messages(path: Path) -> list[dict]:
    return [r for r in read_capture(str(path)).records if r["type"] == "message"]


def _wait_for(cond, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_kill_9_of_the_stdio_tap_leaves_a_readable_capture(tmp_path: Path) -> None:
    cap = tmp_path / "c.jsonl"
    proc = subprocess.Popen([*MCPTAP, "record", "-q", "-o", str(cap), "--", sys.executable, "-c", ECHO],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    sent = [json.dumps({"jsonrpc": "2.0", "method": "notifications/x", "params": {"i": i, "pad": "p" * (i % 50)}}).encode() + b"\n"
            for i in range(200)]
    for line in sent:
        proc.stdin.write(line)
    relayed = b""
    while relayed.count(b"\n") < len(sent):
        relayed += proc.stdout.read(65536)
    _wait_for(lambda: cap.exists() and cap.read_bytes().count(b'"type":"message"') >= 100, "records on disk")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    proc.stdin.close()
    proc.stdout.close()
    proc.stderr.close()        # type: ignore[union-attr]

    capture = read_capture(str(cap))                     # readable: at most a cut last line
    assert capture.end is None
    msgs = [message_from_record(r) for r in capture.records if r["type"] == "message"]
    c2s = b"".join(m.raw for m in msgs if m.direction.value == "c2s")
    s2c = b"".join(m.raw for m in msgs if m.direction.value == "s2c")
    assert len(msgs) >= 100
    assert b"".join(sent).startswith(c2s) and relayed.startswith(s2c)      # exact prefixes, in order
    for args, rc in ((["check", "--fail-on", "warn"], 1), (["show", "--oneline"], 0)):
        p = subprocess.run([*MCPTAP, *args, str(cap)], capture_output=True, text=True, timeout=120)
        assert p.returncode == rc, (args, p.stdout[-2000:], p.stderr)
        assert "Traceback" not in p.stderr
    p = subprocess.run([*MCPTAP, "check", str(cap)], capture_output=True, text=True, timeout=120)
    assert "capture.incomplete" in p.stdout and "capture.digest_mismatch" not in p.stdout and "out_of_sequence" not in p.stdout


def test_kill_9_of_the_http_tap_leaves_a_readable_capture(tmp_path: Path) -> None:
    cap = tmp_path / "h.jsonl"

    async def main() -> None:
        from tests.transport.test_http_tap import upstream_server

        async with upstream_server(fake_mcp) as port:
            proc = subprocess.Popen([sys.executable, "-m", "mcptap.cli.record_http", "--upstream", f"http://127.0.0.1:{port}/mcp",
                                     "-o", str(cap)], stderr=subprocess.PIPE, text=True)
            assert proc.stderr is not None
            line = await trio.to_thread.run_sync(proc.stderr.readline)
            url = line.split()[3]
            for i in range(20):
                status, body = await post(url, {"jsonrpc": "2.0", "id": i, "method": "tools/list"})
                assert status == 200 and json.loads(body)["id"] == i
            await trio.to_thread.run_sync(lambda: _wait_for(lambda: cap.read_bytes().count(b'"kind":"response"') >= 10, "records"))
            proc.send_signal(signal.SIGKILL)
            await trio.to_thread.run_sync(proc.wait, 60)
            proc.stderr.close()

    trio.run(main)
    capture = read_capture(str(cap))
    assert capture.end is None
    ids = [r["json"]["id"] for r in capture.records if r["type"] == "message" and r["kind"] == "request"]
    assert ids == list(range(len(ids))) and len(ids) >= 10
    p = subprocess.run([*MCPTAP, "check", "--fail-on", "error", str(cap)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "capture.incomplete" in p.stdout, p.stdout + p.stderr


async def test_upstream_restart(tmp_path: Path) -> None:
    """The upstream stops and comes back on the same port: the tap answers 502
    while it is gone, serves again after, and the capture says which was which."""
    probe = trio.socket.socket()
    await probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()

    async def serve_once(task_status=trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
        await trio.serve_listeners(fake_mcp, listeners, task_status=task_status)

    async with tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp") as (url, rec):
        statuses = []
        for phase in ("up", "down", "up again"):
            async with trio.open_nursery() as n:
                if phase != "down":
                    await n.start(serve_once)
                for _ in range(3):
                    # a new connection each time: a kept-alive one would be cut by the restart itself
                    status, _ = await post(url, {"jsonrpc": "2.0", "id": len(statuses), "method": "ping"})
                    statuses.append(status)
                n.cancel_scope.cancel()
    assert statuses == [200] * 3 + [502] * 3 + [200] * 3
    recs = read_capture(str(tmp_path / "cap.jsonl")).records
    failed = [f for r in recs for f in r.get("findings", ()) if f["code"] == "http.upstream_failed"]
    answered = [r["json"]["id"] for r in recs if r["type"] == "message" and r["kind"] == "response"]
    assert len(failed) == 3 and answered == [0, 1, 2, 6, 7, 8]
    assert os.path.getsize(tmp_path / "cap.jsonl") > 0
