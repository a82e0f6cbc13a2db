"""`mcptap replay --url` and the legacy HTTP+SSE transport, with the official SDK
server and client: a session recorded by `mcptap record --upstream URL/sse`
replays over HTTP+SSE (event stream, endpoint event, POSTs answered 202, answers
and server requests on the stream) with no change against the same server and
with the changes against a changed one; a Streamable HTTP capture replayed at a
legacy server's SSE URL stops at the failed handshake, and its 405 text/plain
refusals are judged as the tap judges them."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import trio

from mcptap.capture.reader import read_capture
from peers import free_port, listening
from test_serve_http_sdk import SERVER, record_http

pytestmark = pytest.mark.e2e
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
REPLAY = Path(__file__).resolve().parents[1] / "replay"
REPLAY_SERVER = [sys.executable, str(REPLAY / "sdk_server.py")]
REPLAY_CLIENT = [sys.executable, str(REPLAY / "sdk_client.py")]


def _replay(cap: Path, url: str, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPTAP, "replay", str(cap), "--url", url, "-o", str(out), "--timeout", "5"],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def legacy_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The SDK client scenario (tests/replay/sdk_client.py: tools, a call whose
    server asks for elicitation and sampling, a destructive call, resources) over
    the legacy HTTP+SSE transport against the SDK server v1, recorded by
    `mcptap record --upstream URL/sse` as a process."""
    cap = tmp_path_factory.mktemp("legacy-sse") / "legacy.jsonl"
    trio.run(_record_legacy, cap)
    return cap


async def _record_legacy(cap: Path) -> None:
    port = free_port()
    async with listening([*REPLAY_SERVER, "v1", "--sse", str(port)], port):
        rec = subprocess.Popen([*MCPTAP, "record", "--upstream", f"http://127.0.0.1:{port}/sse", "--listen", "127.0.0.1:0", "-o", str(cap)],
                               stderr=subprocess.PIPE, text=True)
        try:
            assert rec.stderr is not None
            line = await trio.to_thread.run_sync(rec.stderr.readline)
            assert "listening on" in line, line
            url = line.split()[3]
            client = await trio.run_process([*REPLAY_CLIENT, "legacy", "--sse", url], capture_stdout=True, capture_stderr=True, check=False)
            assert client.returncode == 0, client.stderr.decode()[-3000:]
        finally:
            rec.send_signal(signal.SIGINT)
            assert await trio.to_thread.run_sync(rec.wait, 20) == 0


async def _replay_sse(cap: Path, version: str, out: Path, *extra: str) -> subprocess.CompletedProcess[bytes]:
    port = free_port()
    async with listening([*REPLAY_SERVER, version, "--sse", str(port)], port):
        return await trio.run_process([*MCPTAP, "replay", str(cap), "--url", f"http://127.0.0.1:{port}/sse", "-o", str(out), "--timeout", "10", *extra],
                                      capture_stdout=True, capture_stderr=True, check=False)


def _by_label(report: dict) -> dict[str, str]:
    return {r["label"]: r["status"] for r in report["exchanges"]}


async def test_a_legacy_sse_capture_replays_against_the_same_server_with_no_change(legacy_capture: Path, tmp_path: Path) -> None:
    recorded = read_capture(str(legacy_capture))
    assert [r for r in recorded.records if r.get("type") == "http" and "endpoint" in r], "not a legacy HTTP+SSE capture"
    new = tmp_path / "v1.jsonl"
    p = await _replay_sse(legacy_capture, "v1", new, "--format", "json")
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()[-3000:]
    report = orjson.loads(p.stdout)
    statuses = _by_label(report)
    assert {s for s in statuses.values()} == {"MATCH", "SKIPPED"}, statuses
    assert statuses["tools/call wipe"] == "SKIPPED"                 # destructive: not repeated
    # the server's requests came on the event stream and were answered over POST from the capture
    assert statuses["tools/call interview"] == statuses["s2c elicitation/create"] == statuses["s2c sampling/createMessage"] == "MATCH"
    assert report["surface"] == [] and report["new_errors"] == []
    # the new capture is what the HTTP tap writes for legacy HTTP+SSE: the endpoint binds the session,
    # every POST is 202 Accepted, the answers come on the GET stream, all under one session key
    cap = read_capture(str(new))
    http = [r for r in cap.records if r.get("type") == "http"]
    (endpoint,) = [r for r in http if "endpoint" in r]
    key = endpoint["session"]
    msgs = list(cap.messages())
    assert key and {m.session for m in msgs} == {key}
    posts = {r["exchange"] for r in http if r["event"] == "request" and r["method"] == "POST"}
    assert posts and {r["status"] for r in http if r["event"] == "response" and r["exchange"] in posts} == {202}
    assert {m.transport["stream"] for m in msgs if m.direction.value == "c2s"} == {"post"}
    assert {m.transport["stream"] for m in msgs if m.direction.value == "s2c"} == {"get"}
    assert cap.end is not None and cap.end["pending"] == []
    assert not [f for r in cap.records for f in r.get("findings", ()) if f["severity"] != "info"]
    # and it differs from the recording only by the call replay skipped
    d = subprocess.run([*MCPTAP, "diff", str(legacy_capture), str(new), "--format", "json"], capture_output=True, timeout=120)
    items = orjson.loads(d.stdout)["items"]
    assert [(i["section"], i["kind"], i["subject"]) for i in items] == [("exchanges", "removed", "tools/call wipe")], items


async def test_a_legacy_sse_capture_replayed_against_a_changed_server_reports_the_change(legacy_capture: Path, tmp_path: Path) -> None:
    p = await _replay_sse(legacy_capture, "v2", tmp_path / "v2.jsonl")
    out = p.stdout.decode()
    assert p.returncode == 1, out + p.stderr.decode()[-3000:]
    changed = {ln.split()[1] + (" " + ln.split()[2] if ln.split()[1] == "tools/call" else "")
               for ln in out.splitlines() if " CHANGED " in ln}
    assert changed == {"initialize", "tools/list", "tools/call greet"}, out
    assert "result.content[0].text: 'Hello, Ann!' -> 'Hi Ann.'" in out
    assert "! tool 'echo' removed  [breaking]" in out and "! server capability 'completions' dropped  [breaking]" in out, out
    # the server's requests inside interview still came on the stream and were answered
    assert sum(1 for ln in out.splitlines() if ("s2c elicitation/create" in ln or "s2c sampling/createMessage" in ln) and "MATCH" in ln) == 2, out


async def test_a_legacy_sse_replay_at_a_server_without_the_event_stream_reports_the_failed_handshake(legacy_capture: Path, tmp_path: Path) -> None:
    """The server moved to Streamable HTTP only: its GET /sse is 404, so there is
    no endpoint: the initialize is ERROR-CHANGED and nothing more is sent."""
    new = tmp_path / "moved.jsonl"
    port = free_port()
    async with listening([*REPLAY_SERVER, "v1", "--http", str(port)], port):
        p = await trio.run_process([*MCPTAP, "replay", str(legacy_capture), "--url", f"http://127.0.0.1:{port}/sse", "-o", str(new), "--timeout", "5"],
                                   capture_stdout=True, capture_stderr=True, check=False)
    out = p.stdout.decode()
    assert p.returncode == 1, out + p.stderr.decode()
    assert any("initialize" in ln and "ERROR-CHANGED" in ln and "404" in ln for ln in out.splitlines()), out
    assert "not sent: initialize failed (error 404 'HTTP 404 text/plain" in out, out
    records = read_capture(str(new)).records
    assert [r["method"] for r in records if r.get("type") == "http" and r.get("event") == "request"] == ["GET"]
    assert not [r for r in records if r.get("type") == "message"]


async def test_replay_stops_at_a_failed_handshake_and_judges_plain_refusals_as_the_tap(tmp_path: Path) -> None:
    cap = tmp_path / "modern.jsonl"
    await record_http("sse-legacy", cap)   # Streamable HTTP, initialize handshake
    new = tmp_path / "new.jsonl"
    port = free_port()
    async with listening([sys.executable, str(SERVER), str(port), "sse"], port):
        # a Streamable HTTP client at the legacy SSE path: POST /sse is 405 text/plain
        p = _replay(cap, f"http://127.0.0.1:{port}/sse", new)
    assert p.returncode == 1, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert any("initialize" in ln and "405" in ln for ln in lines), p.stdout
    assert "findings new in the live session" not in p.stdout, p.stdout
    assert p.stdout.count("not sent: initialize failed") >= 3, p.stdout
    records = read_capture(str(new)).records
    posts = [r for r in records if r.get("type") == "http" and r.get("event") == "request" and r.get("method") == "POST"]
    assert len(posts) == 1                     # only the initialize went out
    codes = [f["code"] for r in records for f in r.get("findings", ())]
    assert "http.request_refused" in codes
    assert not [c for c in codes if c.startswith("jsonrpc.")], codes
    assert not [r for r in records if r.get("type") == "message" and r.get("dir") == "s2c"]
