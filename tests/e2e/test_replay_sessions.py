"""Replay per session: a capture holding two sessions replays each against a
fresh server (a new process for stdio targets), with verdicts grouped per
session and no `lifecycle.reinitialize` in the new capture."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import trio
from mcp import Client

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.transport.http import HttpTap, HttpTapConfig
from peers import free_port, listening
from scripted import c2s, handshake, record, req, res, s2c

pytestmark = pytest.mark.e2e
SERVER = Path(__file__).parent / "sdk_server.py"
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


async def two_http_sessions(cap: Path) -> None:
    """Two SDK client sessions (initialize handshake each) through the HTTP tap."""
    port = free_port()
    async with listening([sys.executable, str(SERVER), str(port), "streamable-http"], port):
        upstream = f"http://127.0.0.1:{port}/mcp"
        rec = Recorder(CaptureWriter.open(str(cap)), "http", {"url": upstream}, clock=monotonic_us_clock(), started=utc_timestamp())
        async with trio.open_nursery() as nursery:
            url = await nursery.start(HttpTap(HttpTapConfig(upstream=upstream), rec).serve)
            for text in ("first", "second"):
                async with Client(url, mode="legacy") as client:
                    await client.list_tools()
                    await client.call_tool("echo", {"text": text})
            nursery.cancel_scope.cancel()
        rec.close()


def _replay(cap: Path, new: Path, *server: str) -> tuple[int, dict]:
    proc = subprocess.run([*MCPTAP, "replay", str(cap), "-o", str(new), "--format", "json", "--allow-side-effects", "--", *server],
                          capture_output=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr.decode()[-2000:]
    return proc.returncode, orjson.loads(proc.stdout)


async def test_two_http_sessions_replayed_against_a_stdio_server(tmp_path: Path) -> None:
    cap = tmp_path / "two.jsonl"
    await two_http_sessions(cap)
    assert len({r.get("session") for r in read_capture(str(cap)).records if r["type"] == "message"}) == 2
    new = tmp_path / "new.jsonl"
    code, report = await trio.to_thread.run_sync(_replay, cap, new, sys.executable, str(SERVER))
    assert code == 0, report
    assert [s["counts"]["MATCH"] for s in report["sessions"]] == [3, 3]
    assert [r["session"] for r in report["exchanges"]] == [0, 0, 0, 1, 1, 1]
    again = read_capture(str(new))
    codes = {f["code"] for r in again.records for f in r.get("findings", ())}
    assert "lifecycle.reinitialize" not in codes
    assert not [f for r in again.records for f in r.get("findings", ()) if f["severity"] == "error"]
    spawns = [r for r in again.records if r["type"] == "process" and r["event"] == "spawn"]
    assert len(spawns) == 2                                  # a fresh server process per session
    # the new capture re-annotates to the same verdict (check agrees)
    proc = subprocess.run([*MCPTAP, "check", str(new)], capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stdout.decode()


def test_a_restarted_stdio_session_gets_its_own_process(tmp_path: Path) -> None:
    # a stdio capture whose client initialized twice (the server was restarted)
    cap = record(tmp_path / "restart.jsonl", [
        *handshake("2025-06-18"), c2s(req(2, "ping")), s2c(res(2)),
        *handshake("2025-06-18"), c2s(req(2, "ping")), s2c(res(2)),
    ])
    code, report = _replay(cap, tmp_path / "new.jsonl", sys.executable, str(SERVER))
    assert len(report["sessions"]) == 2 and report["sessions"][1]["recorded"] == "stdio-session-2"
    assert [r["label"] for r in report["exchanges"] if r["status"] != "MATCH"] in ([], ["initialize", "initialize"])
    again = read_capture(str(tmp_path / "new.jsonl"))
    assert "lifecycle.reinitialize" not in {f["code"] for r in again.records for f in r.get("findings", ())}
    assert len([r for r in again.records if r["type"] == "process" and r["event"] == "spawn"]) == 2


async def test_a_restarted_stdio_session_replays_as_a_fresh_http_session(tmp_path: Path) -> None:
    cap = record(tmp_path / "restart.jsonl", [
        *handshake("2025-06-18"), c2s(req(2, "tools/list")), s2c(res(2, {"tools": []})),
        *handshake("2025-06-18"), c2s(req(2, "tools/list")), s2c(res(2, {"tools": []})),
    ])
    port = free_port()
    new = tmp_path / "new.jsonl"
    async with listening([sys.executable, str(SERVER), str(port), "streamable-http"], port):
        proc = await trio.run_process([*MCPTAP, "replay", str(cap), "-o", str(new), "--format", "json",
                                       "--url", f"http://127.0.0.1:{port}/mcp"], capture_stdout=True, capture_stderr=True, check=False)
    assert proc.returncode in (0, 1), proc.stderr.decode()[-2000:]
    report = orjson.loads(proc.stdout)
    assert len(report["sessions"]) == 2
    again = read_capture(str(new))
    sessions = {r.get("session") for r in again.records if r["type"] == "message"}
    assert len(sessions) == 2 and None not in sessions               # two live Mcp-Session-Ids
    assert "lifecycle.reinitialize" not in {f["code"] for r in again.records for f in r.get("findings", ())}
