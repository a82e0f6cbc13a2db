"""Every kind of record a capture may hold on the server's side is served, never a crash:
lines that are not JSON-RPC messages (a banner, a blank line, JSON with trailing text, JSON
that is not JSON-RPC, invalid UTF-8, a line over 1 MiB) are replayed byte for byte over
stdio (a test double reproduces what the real server did) and left out with a ``serve`` note
over HTTP; a server's batch answers with the live ids; ``chunk`` and ``gap`` records are read
as every reader reads them. The mock used to die (``TypeError: Type is not JSON
serializable: _Unparsed``, exit 2, nothing on stdout) at the first such line."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx2 as httpx
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.serve.core import ServeCore
from mcptap.serve.http import HttpMock
from mcptap.serve.live import line_of
from mcptap.serve.script import script_from_path
from scripted import c2s, handshake, j, note, record, req, res, s2c

BANNER = b"Server running on stdio\n"
HUGE = b"x" * (2 << 20) + b"\n"
ODD = [b"\n", b'{"jsonrpc":"2.0","method":"x"} trailing\n', b"null\n", b'{"a":1}\n', b"\xff\xfe not UTF-8\n"]
LOG = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "b"}}
INIT = {"jsonrpc": "2.0", "id": "a", "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "live", "version": "1"}}}


def _capture(path: Path) -> Path:
    return record(path, [
        s2c(BANNER), *handshake(), *[s2c(x) for x in ODD],
        c2s(req(2, "tools/list")), s2c(HUGE), s2c(res(2, {"tools": []})),
        c2s(req(3, "ping")), s2c(j([json.loads(res(3)), LOG])),
    ])


def _serve(cap: Path, *messages: Any, extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[bytes]:
    stdin = b"".join(j(m) for m in messages)
    return subprocess.run([sys.executable, "-m", "mcptap.cli.main", "serve", str(cap), *extra], input=stdin,
                          capture_output=True, timeout=120, check=False)


def _lines(out: bytes) -> list[bytes]:
    return out.splitlines(keepends=True)


def test_stdio_replays_each_recorded_line_that_is_not_a_message_byte_for_byte(tmp_path: Path) -> None:
    cap = _capture(tmp_path / "odd.jsonl")
    own = tmp_path / "own.jsonl"
    got = _serve(cap, INIT, json.loads(note("notifications/initialized")), json.loads(req(20, "tools/list")),
                 json.loads(req(30, "ping")), extra=("-o", str(own)))
    assert got.returncode == 0, got.stderr
    lines = _lines(got.stdout)
    assert lines[0] == BANNER                                        # before any client message, as recorded
    assert json.loads(lines[1])["id"] == "a"
    assert lines[2:7] == ODD                                         # after initialized, as recorded
    assert lines[7] == HUGE
    assert json.loads(lines[8]) == {"jsonrpc": "2.0", "id": 20, "result": {"tools": []}}
    # the server answered the ping in a batch: the batch again, with the live id
    assert json.loads(lines[9]) == [{"jsonrpc": "2.0", "id": 30, "result": {}}, LOG]
    assert len(lines) == 10
    # the mock's own capture holds them as the client got them
    kinds = [r.get("kind") for r in read_capture(str(own)).records if r.get("type") == "message" and r.get("dir") == "s2c"]
    assert kinds == ["non_json", "response", "non_json", "non_json", "invalid", "invalid", "non_json", "non_json", "response", "batch"]


def test_chunk_and_gap_records_are_served_as_the_readers_frame_them(tmp_path: Path) -> None:
    cap = record(tmp_path / "chunks.jsonl", [
        *handshake(),
        ("chunk", ("s2c", b"not JSON, stored unframed\n" + j(LOG))),
        c2s(req(2, "tools/list")),
        ("lost", ("s2c", 40)), s2c(b"rest of the line the gap cut\n"),  # the answer was forwarded, not recorded
        c2s(req(3, "prompts/list")), s2c(res(3, {"prompts": []})), ("gap", "the disk was full"),
    ])
    got = _serve(cap, INIT, json.loads(note("notifications/initialized")), json.loads(req(20, "tools/list")),
                 json.loads(req(30, "prompts/list")))
    assert got.returncode == 0, got.stderr
    lines = _lines(got.stdout)
    assert json.loads(lines[0])["id"] == "a"
    assert lines[1] == b"not JSON, stored unframed\n" and json.loads(lines[2]) == LOG
    # tools/list's answer is in the gap: none to give (it stays pending, as recorded); prompts/list's is
    assert [json.loads(x) for x in lines[3:]] == [{"jsonrpc": "2.0", "id": 30, "result": {"prompts": []}}]


async def test_http_leaves_such_lines_out_with_a_note_and_answers_the_rest(tmp_path: Path) -> None:
    cap = _capture(tmp_path / "odd.jsonl")
    said: list[str] = []
    own = tmp_path / "own.jsonl"
    rec = Recorder(CaptureWriter.open(str(own)), "http", target={}, clock=monotonic_us_clock(), started=utc_timestamp())
    server = HttpMock(ServeCore(script_from_path(str(cap))), rec, say=said.append)
    accept = {"Accept": "application/json, text/event-stream"}
    async with trio.open_nursery() as nursery:
        url = await nursery.start(server.serve)
        async with httpx.AsyncClient(timeout=30) as http:
            r = await http.post(url, json=INIT, headers=accept)
            assert r.status_code == 200 and r.json()["id"] == "a"
            r = await http.post(url, json=json.loads(note("notifications/initialized")), headers=accept)
            assert r.status_code == 202
            r = await http.post(url, json=json.loads(req(20, "tools/list")), headers=accept)
            assert r.status_code == 200 and r.json() == {"jsonrpc": "2.0", "id": 20, "result": {"tools": []}}
        nursery.cancel_scope.cancel()
    rec.close()
    notes = [r for r in read_capture(str(own)).records if r.get("type") == "note" and r.get("source") == "serve"]
    assert len(notes) == len(ODD) + 2                               # each line left out, the banner before the first answer too
    # a note quotes a line cut short without a piece of the word the cut fell in (a token there: no rule knows a piece)
    assert any(n["message"].endswith("'…'") for n in notes) and not any("xxxx" in n["message"] for n in notes)
    assert len(said) == 1 and "not a JSON-RPC message" in said[0]


_DIR = tempfile.mkdtemp(prefix="mcptap-serve-lines-")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=30) | st.sampled_from([b"", b"null", b"[]", b"[1,{}]", b'{"id":2}', b'{"jsonrpc":"2.0","id":2,"result":{}} x']),
                min_size=1, max_size=6))
def test_whatever_the_server_wrote_the_mock_serves_it_without_error(lines: list[bytes]) -> None:
    path = Path(_DIR) / "c.jsonl"
    half = len(lines) // 2
    record(path, [*[s2c(x + b"\n") for x in lines[:half]], *handshake(), c2s(req(2, "tools/list")),
                  *[s2c(x + b"\n") for x in lines[half:]], s2c(res(2, {"tools": []}))])
    core = ServeCore(script_from_path(str(path)))
    live = core.open()
    outs = core.opening(live) + core.receive(live, INIT) + core.receive(live, json.loads(note("notifications/initialized")))
    outs += core.receive(live, json.loads(req(20, "tools/list")))
    for o in outs:
        data = line_of(o)
        assert data.endswith(b"\n") and (o.raw is not None or json.loads(data) == o.value)
    assert any(o.answers == 20 for o in outs)
