"""``mcptap serve CAPTURE --extend -- CMD`` against a real SDK server (extend_server.py):
the capture extended keeps its original session byte for byte (every record type, gzip
stays gzip, its start time), adds the real server's stderr and process records, stays
scrubbed when it was, survives the host's SIGTERM, forwards cancellations, and keeps the
capture's era with the SDK client's default (auto) mode."""

from __future__ import annotations

import base64
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.model import Direction
from mcptap.recorder import Recorder

pytestmark = pytest.mark.e2e
pytest_plugins = ["pytester"]
HERE = Path(__file__).parent
SERVER = [sys.executable, str(HERE / "extend_server.py")]
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
C2S, S2C = Direction.C2S, Direction.S2C
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
INIT_RESULT = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": False}},
               "serverInfo": {"name": "extend-server", "version": "1.0.0"}}
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _line(v: Any) -> bytes:
    return json.dumps(v, separators=(",", ":")).encode() + b"\n"


def synthesized(path: Path) -> None:
    """A stdio capture with every kind of record a tap writes: context, note, chunk (a flood
    stored unframed), gap, stderr, process, message, eof, end."""
    t = [0]

    def clock() -> int:
        t[0] += 10
        return t[0]

    rec = Recorder(CaptureWriter.open(str(path)), "stdio", target={"argv": ["server"]}, clock=clock,
                   started="2020-01-02T03:04:05.000000Z")
    rec.process("spawn", pid=1, argv=["server"])
    rec.note("test", what="a note record")
    rec.stdio_bytes(C2S, _line(INIT))
    rec.stdio_bytes(S2C, _line({"jsonrpc": "2.0", "id": 1, "result": INIT_RESULT}))
    rec.stdio_bytes(C2S, _line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    log = _line({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "flood"}})
    rec.stdio_unframed(S2C, log * 500)
    rec.stdio_unframed(S2C, log * 500)
    rec.lost(S2C, 1000, "test: bytes forwarded but not recorded")
    rec.stdio_bytes(S2C, b'"cut line"}}\n')
    rec.stdio_bytes(C2S, _line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
    rec.stdio_bytes(S2C, _line({"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}))
    rec.stderr(b"old server stderr\n")
    rec.stdio_eof(C2S)
    rec.stdio_eof(S2C)
    rec.exit(code=0)
    rec.close(exit_code=0)


def run_raw(capture: Path, messages: list[dict[str, Any]], *extra: str, env: dict[str, str] | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """``serve CAPTURE --extend`` with ``messages`` on stdin, then EOF."""
    return subprocess.run([*MCPTAP, "serve", str(capture), *extra, "--extend", "--", *SERVER],
                          input=b"".join(_line(m) for m in messages), capture_output=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


ECHO_NEW = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "new " + SECRET}}}


def _lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.splitlines(keepends=True)


def _check(path: Path) -> str:
    out = subprocess.run([*MCPTAP, "check", "--full", str(path)], capture_output=True, text=True, timeout=60)
    return out.stdout + out.stderr


@pytest.mark.parametrize("gz", [False, True], ids=["jsonl", "jsonl.gz"])
def test_extend_keeps_every_original_record_byte_for_byte(tmp_path: Path, gz: bool) -> None:
    plain = tmp_path / "src.jsonl"
    synthesized(plain)
    cap = tmp_path / ("cap.jsonl.gz" if gz else "cap.jsonl")
    cap.write_bytes(gzip.compress(plain.read_bytes()) if gz else plain.read_bytes())
    before = _lines(cap)
    assert {json.loads(x)["type"] for x in before} >= {"context", "note", "chunk", "gap", "stderr", "process", "message", "eof", "end"} - {"context"}
    done = run_raw(cap, [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}, ECHO_NEW])
    assert done.returncode == 0, done.stderr
    assert b"new " + SECRET.encode() in done.stdout                  # answered by the real server
    assert (cap.read_bytes()[:2] == b"\x1f\x8b") is gz               # gzip stays gzip
    after = _lines(cap)
    head_before, head_after = json.loads(before[0]), json.loads(after[0])
    assert head_after == {**head_before, "episodes": 1}              # started (and every field) kept
    kept = [x for x in before[1:] if json.loads(x)["type"] != "end"]
    assert after[1:1 + len(kept)] == kept                            # the original session, byte for byte
    added = [json.loads(x) for x in after[1 + len(kept):]]
    assert added[-1]["type"] == "end" and sum(1 for x in after if b'"type":"end"' in x) == 1
    assert {r.get("session") for r in added if r["type"] == "message"} == {"episode-2"}
    events = [r["event"] for r in added if r["type"] == "process"]
    assert events[0] == "spawn" and events[-1] == "exit"             # the real server's process records
    assert any("extend-server up" in r.get("data", "") for r in added if r["type"] == "stderr")
    assert all(r["t_us"] >= json.loads(kept[-1])["t_us"] for r in added)
    report = _check(cap)
    assert "digest_mismatch" not in report and "out_of_sequence" not in report, report
    _offsets_tile(cap)                                               # the new session's offsets continue the streams
    merged = read_capture(str(cap))
    episode = [r for r in merged.records if r["type"] == "message" and r.get("session") == "episode-2"]
    assert [r.get("method") for r in episode if r["dir"] == "c2s"] == ["initialize", "notifications/initialized", "tools/call"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["src.jsonl", cap.name])      # no temp file left


def test_extend_of_a_scrubbed_capture_scrubs_the_new_session(tmp_path: Path) -> None:
    src = tmp_path / "src.jsonl"
    synthesized(src)
    cap = tmp_path / "cap.jsonl"
    subprocess.run([*MCPTAP, "scrub", str(src), "-o", str(cap)], check=True, capture_output=True, timeout=60)
    scrubbed = cap.read_bytes()
    # another user's key: refused before anything is served, the capture untouched
    other = run_raw(cap, [INIT, ECHO_NEW], env={"MCPTAP_REDACT_KEY": "ab" * 32})
    assert other.returncode == 2 and other.stdout == b""
    assert b"cannot extend" in other.stderr and b"scrubbed" in other.stderr
    assert cap.read_bytes() == scrubbed
    done = run_raw(cap, [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}, ECHO_NEW])
    assert done.returncode == 0, done.stderr
    assert SECRET.encode() in done.stdout                            # the client got the real answer
    merged = cap.read_bytes()
    assert SECRET.encode() not in merged and merged.count(b"redacted") > scrubbed.count(b"redacted")
    assert json.loads(merged.splitlines()[0])["scrubbed"] == json.loads(scrubbed.splitlines()[0])["scrubbed"]
    assert "digest_mismatch" not in _check(cap)
    _offsets_tile(cap)                      # the scrubbed new session's offsets continue the scrubbed streams


@pytest.fixture(scope="module")
def legacy_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A capture of the SDK client (initialize era) and extend_server: tools/list, echo 'a'."""
    import trio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    cap = tmp_path_factory.mktemp("extend") / "legacy.jsonl"

    async def record() -> None:
        params = StdioServerParameters(command=sys.executable, args=[*MCPTAP[1:], "record", "--quiet", "-o", str(cap), "--", *SERVER])
        async with Client(params, mode="legacy") as client:
            await client.list_tools()
            await client.call_tool("echo", {"text": "a"})

    trio.run(record)
    return cap


def _copy(src: Path, d: Path) -> Path:
    cap = d / "cap.jsonl"
    cap.write_bytes(src.read_bytes())
    return cap


def test_sigterm_ends_the_session_and_keeps_what_the_real_server_answered(legacy_capture: Path, tmp_path: Path) -> None:
    cap = _copy(legacy_capture, tmp_path)
    own = tmp_path / "own.jsonl"
    proc = subprocess.Popen([*MCPTAP, "serve", str(cap), "-o", str(own), "--extend", "--", *SERVER],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    for m in (INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"},
              {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "fresh"}}},
              {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "sleepy", "arguments": {"seconds": 60}}}):
        proc.stdin.write(_line(m))
        proc.stdin.flush()
    answers = [proc.stdout.readline() for _ in range(2)]
    assert b"fresh" in answers[1]
    proc.send_signal(signal.SIGTERM)                # stdin still open, sleepy still running
    t0 = time.monotonic()
    rc = proc.wait(timeout=15)
    assert rc == 128 + signal.SIGTERM and time.monotonic() - t0 < 5, proc.communicate()[1]
    proc.stdin.close()
    proc.stdout.close()
    assert proc.stderr is not None
    proc.stderr.close()
    end = read_capture(str(own)).end
    assert end is not None and end["exit_code"] == 128 + signal.SIGTERM        # -o finished
    merged = cap.read_bytes()
    assert b"fresh" in merged and json.loads(merged.splitlines()[0])["episodes"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cap.jsonl", "own.jsonl"]


def test_a_cancel_reaches_the_real_server_that_has_the_request(legacy_capture: Path, tmp_path: Path) -> None:
    cap = _copy(legacy_capture, tmp_path)
    mark = tmp_path / "mark.txt"
    t0 = time.monotonic()
    done = run_raw(cap, [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                         {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "sleepy", "arguments": {"seconds": 40}}},
                         {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3, "reason": "test"}},
                         {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "after"}}}],
                   env={"EXTEND_MARK": str(mark)})
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - t0 < 20                       # the cancelled request is not waited for
    assert mark.read_text() == "cancelled 40\n"             # the server was told
    assert b"after" in done.stdout
    assert "response_after_cancel" not in _check(cap)


SDK_TEST = '''
import sys, anyio, pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

@pytest.mark.mcptap(record_mode="new_episodes")
async def test_new_episode(mcptap_mock):
    argv = mcptap_mock({capture!r}, server={server!r})
    async with Client(StdioServerParameters(command=argv[0], args=argv[1:]){mode}) as c:
        with anyio.move_on_after(0.5):
            await c.call_tool("sleepy", {{"seconds": 30}})
        r = await c.call_tool("echo", {{"text": "brand new"}})
        assert r.content[0].text == "brand new"
        tools = await c.list_tools()
    assert sorted(t.name for t in tools.tools) == ["die", "echo", "shout", "sleepy"]
'''


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_sdk_client_new_episodes_after_a_cancelled_forwarded_call(legacy_capture: Path, tmp_path: Path,
                                                                    pytester: pytest.Pytester, mode: str) -> None:
    """The SDK client's shutdown (stdin closed, SIGTERM 2 s later) after a cancelled forwarded
    call: the capture is extended all the same. In auto mode the SDK asks server/discover
    first: the capture's era (initialize) is kept, the recorded answers validate."""
    cap = _copy(legacy_capture, tmp_path)
    pytester.makeini("[pytest]\ntrio_mode = true\n")
    pytester.makepyfile(test_ne=SDK_TEST.format(capture=str(cap), server=SERVER, mode=', mode="legacy"' if mode == "legacy" else ""))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    merged = read_capture(str(cap))
    assert merged.header["episodes"] == 1 and b"brand new" in cap.read_bytes()
    episode = [r for r in merged.records if r["type"] == "message" and r.get("session") == "episode-2"]
    assert "initialize" in [r.get("method") for r in episode] and "tools/call" in [r.get("method") for r in episode]
    # auto mode: the discover the SDK tries first got the mock's -32601 (never the real server's answer)
    discover = [r["seq"] for r in episode if r.get("method") == "server/discover"]
    assert [r["json"]["error"]["code"] for r in episode if r.get("pair") in discover] == [-32601] * len(discover)
    assert {r.get("rev") for r in episode if r["dir"] == "s2c" and r.get("rev")} == {"2025-11-25"}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".") or "episode" in p.name) == []
    report = _check(cap)
    assert "response_after_cancel" not in report and "0 error" in report, report


BROKEN_MERGE_TEST = '''
import sys, pytest
from pathlib import Path
from mcp import Client
from mcp.client.stdio import StdioServerParameters

@pytest.mark.mcptap(record_mode="new_episodes")
async def test_capture_replaced_under_the_mock(mcptap_mock):
    argv = mcptap_mock({capture!r}, server={server!r})
    async with Client(StdioServerParameters(command=argv[0], args=argv[1:]), mode="legacy") as c:
        r = await c.call_tool("echo", {{"text": "brand new"}})
        assert r.content[0].text == "brand new"
        Path({capture!r}).write_text("not a capture any more\\n")     # the merge at the end cannot read it
'''


def test_new_episodes_fails_the_test_when_the_capture_was_not_extended(legacy_capture: Path, tmp_path: Path,
                                                                        pytester: pytest.Pytester) -> None:
    """The real server answered, the merge failed: the test passed with the capture unchanged."""
    cap = _copy(legacy_capture, tmp_path)
    pytester.makeini("[pytest]\ntrio_mode = true\n")
    pytester.makepyfile(test_broken=BROKEN_MERGE_TEST.format(capture=str(cap), server=SERVER))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([f"*mcptap_mock: the real server answered requests, but capture {cap} was not extended*"])


def test_extend_hides_the_real_servers_argv_secrets_as_record_does(tmp_path: Path) -> None:
    # before: the new session's spawn record, and any echo of the value, held the token in clear
    # (record -- CMD replaces them everywhere; a breaker found --extend did not)
    cap = tmp_path / "cap.jsonl"
    synthesized(cap)
    token = "sk-" + "Zq9Xw8Vu7Ts6Rp5On4Ml3Kj2Ih1Gf0Ed"
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "key " + token}}}
    done = subprocess.run([*MCPTAP, "serve", str(cap), "--extend", "--", *SERVER, "--token", token],
                          input=b"".join(_line(m) for m in [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}, call]),
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert b"key " + token.encode() in done.stdout                   # the client gets the real bytes
    data = cap.read_bytes()
    assert token.encode() not in data
    spawn = [json.loads(x) for x in data.splitlines() if b'"event":"spawn"' in x][-1]
    assert spawn["argv"][-2] == "--token" and spawn["argv"][-1].startswith("\u00abredacted:")
    report = _check(cap)
    assert "digest_mismatch" not in report, report


def _offsets_tile(path: Path) -> None:
    """Each stdio message and chunk record's ``offset`` is where its bytes start in its direction's
    stream, which the file's records make up in order (every session; a directed gap's bytes count)."""
    at = {"c2s": 0, "s2c": 0}
    for line in _lines(path)[1:]:
        r = json.loads(line)
        d = r.get("dir")
        if r["type"] in ("message", "chunk") and d in at:
            assert r["offset"] == at[d], (r["seq"], r.get("session"), d, r["offset"], at[d])
            if r["type"] == "chunk":
                at[d] += len(r["data"].encode()) if "data" in r else len(base64.b64decode(r["data_b64"]))
            else:
                at[d] += len(r["raw"].encode()) if "raw" in r else len(json.dumps(r["json"], separators=(",", ":"), ensure_ascii=False).encode()) + 1
        elif r["type"] == "gap" and d in at:
            at[d] += r.get("bytes") or 0


def test_extend_adds_no_replayed_notification_and_continues_the_offsets(tmp_path: Path) -> None:
    # the original session: the SDK client calls shout 'a' (the real server logs, then answers)
    import trio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    cap = tmp_path / "cap.jsonl"

    async def record() -> None:
        params = StdioServerParameters(command=sys.executable, args=[*MCPTAP[1:], "record", "--quiet", "-o", str(cap), "--", *SERVER])
        async with Client(params, mode="legacy") as client:
            await client.call_tool("shout", {"text": "a"})

    trio.run(record)
    logs = [r for r in read_capture(str(cap)).records if r["type"] == "message" and r.get("method") == "notifications/message"]
    assert len(logs) == 1 and "shouted a" in json.dumps(logs[0]["json"])
    shout = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "shout", "arguments": {"text": "a"}}}
    new = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "shout", "arguments": {"text": "b"}}}
    version = next(r for r in read_capture(str(cap)).records if r.get("method") == "initialize")["json"]["params"]["protocolVersion"]
    init = {**INIT, "params": {**INIT["params"], "protocolVersion": version}}
    done = run_raw(cap, [init, {"jsonrpc": "2.0", "method": "notifications/initialized"}, shout, new])
    assert done.returncode == 0, done.stderr
    assert b"shouted a" in done.stdout and b"shouted b" in done.stdout          # the client got both logs
    merged = read_capture(str(cap))
    episode = [r for r in merged.records if r["type"] == "message" and r.get("session") == "episode-2"]
    # the replayed log is in the capture once (the original's); the real server's new one is added
    said = [r["json"]["params"]["data"] for r in episode if r.get("method") == "notifications/message"]
    assert said == ["shouted b"], said
    assert sorted(r["id"] for r in episode if r["dir"] == "s2c" and "id" in r) == [1, 2, 3]      # every answer the client got
    _offsets_tile(cap)
    report = _check(cap)
    assert "digest_mismatch" not in report and "unmatched" not in report, report


@pytest.mark.parametrize("scrub_first", [False, True], ids=["killed", "scrubbed-copy-of-killed"])
def test_extend_of_an_incomplete_capture_says_its_earlier_sessions_may_be_incomplete(tmp_path: Path, scrub_first: bool) -> None:
    """A killed tap's capture (no end record; chunk records) gets a gap record
    before the new session; so does a scrubbed copy of it, whose re-framed end
    record is marked ``incomplete`` (once taken for a whole capture's end)."""
    plain = tmp_path / "src.jsonl"
    synthesized(plain)
    lines = _lines(plain)
    cap = tmp_path / "cap.jsonl"
    cap.write_bytes(b"".join(x for x in lines if b'"type":"end"' not in x))       # killed: no end record
    if scrub_first:
        copy = tmp_path / "copy.jsonl"
        done = subprocess.run([*MCPTAP, "scrub", str(cap), "-o", str(copy)], capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert json.loads(_lines(copy)[-1]).get("incomplete") is True
        cap = copy
    done = run_raw(cap, [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}, ECHO_NEW])
    assert done.returncode == 0, done.stderr
    gaps = [json.loads(x) for x in _lines(cap) if b'"type":"gap"' in x]
    assert any("had no end record" in g.get("reason", "") for g in gaps), gaps
