"""Large SSE events through the HTTP tap: forwarded byte for byte while they
stream, recorded whole and exact (the observer frees each event's copies as it
goes, issue 13), whatever the chunking and line ends."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h11
import orjson
import pytest
import trio

from h11_upstream import requests
from mcptap.capture import pieces
from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import read_capture
from mcptap.protocol import skeleton, sse
from tests.transport.test_http_tap import read_response, tap, upstream_server

BLOB = "0123456789abcdef" * (3 << 16)          # 3 MiB: above the recorder's raw-only bound (1 MiB)


def events(eol: bytes) -> list[bytes]:
    big = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": BLOB}}).encode()
    small = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "after"}}).encode()
    return [b"id: 1" + eol + b"data: " + big + eol + eol, b"data: " + small + eol + eol]


def sse_upstream(eol: bytes, piece: int):
    async def handler(stream: trio.abc.Stream) -> None:
        conn = h11.Connection(h11.SERVER)
        await read_request(conn, stream)
        await stream.send_all(conn.send(h11.Response(status_code=200, headers=[("Content-Type", "text/event-stream")])))
        body = b"".join(events(eol))
        for k in range(0, len(body), piece):
            await stream.send_all(conn.send(h11.Data(data=body[k:k + piece])))
        await stream.send_all(conn.send(h11.EndOfMessage()))
        await stream.aclose()
    return handler


async def read_request(conn: h11.Connection, stream: trio.abc.Stream) -> bytes:
    """The body of the request ``conn`` (server side) reads from ``stream``."""
    async for _, body in requests(stream, conn):
        return body
    raise AssertionError("the client closed before a whole request")


async def get_stream(url: str) -> bytes:
    host, rest = url.split("//")[1].split("/", 1)
    h, p = host.split(":")
    s = await trio.open_tcp_stream(h, int(p))
    c = h11.Connection(h11.CLIENT)
    await s.send_all(c.send(h11.Request(method="GET", target="/" + rest, headers=[("Host", host), ("Accept", "text/event-stream")]))
                     + c.send(h11.EndOfMessage()))
    out = bytearray()
    while True:
        ev = c.next_event()
        if ev is h11.NEED_DATA:
            c.receive_data(await s.receive_some(1 << 20))
        elif isinstance(ev, h11.Data):
            out += ev.data
        elif isinstance(ev, (h11.EndOfMessage, h11.ConnectionClosed)):
            break
    await s.aclose()
    return bytes(out)


@pytest.mark.parametrize(("eol", "piece"), [(b"\n", 65536), (b"\r\n", 50000), (b"\n", 1 << 22)])
async def test_large_sse_event_forwarded_and_recorded_exactly(tmp_path: Path, eol: bytes, piece: int):
    async with upstream_server(sse_upstream(eol, piece)) as port, tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp") as (url, _rec):
        got = await get_stream(url)
    assert got == b"".join(events(eol))
    cap = read_capture(str(tmp_path / "cap.jsonl"))
    msgs = [r for r in cap.records if r["type"] == "message"]
    assert [m["kind"] for m in msgs] == ["notification", "notification"]
    big, small = msgs
    assert "json" not in big and json.loads(decode_bytes(big, "raw"))["params"]["data"] == BLOB
    assert big["transport"]["sse"]["bytes"] == len(events(eol)[0]) and big["transport"]["sse"]["id"] == "1"
    # the SDK layout (LF) is not stored twice; CR LF events keep their exact bytes
    assert ("raw" in big["transport"]["sse"]) == (eol == b"\r\n")
    if eol == b"\r\n":
        assert big["transport"]["sse"]["raw"].encode() == events(eol)[0]
    assert small["json"]["params"]["data"] == "after" and small["transport"]["sse"]["offset"] == len(events(eol)[0])
    end = next(r for r in cap.records if r["type"] == "http" and r.get("event") == "end")
    assert end["response_bytes"] == len(got) and end["sse_events"] == 2


@pytest.mark.parametrize("piece", [65536, 1 << 22])
async def test_event_above_the_bounds_recorded_in_pieces_exactly(tmp_path: Path, monkeypatch, piece: int):
    """Bounds set small (the 3 MiB event is above both): the parser hands its
    buffer over when the event fills it and the message record is written in
    pieces (capture/pieces.py). The capture is the same, and check finds it
    complete and its order intact."""
    monkeypatch.setattr(pieces, "STREAM_ABOVE", 1 << 20)
    monkeypatch.setattr(pieces, "PIECE", 100_003)          # pieces that cut lines and characters anywhere
    monkeypatch.setattr(sse, "HAND_OVER_ABOVE", 1000)
    async with upstream_server(sse_upstream(b"\n", piece)) as port, tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp") as (url, _rec):
        got = await get_stream(url)
    assert got == b"".join(events(b"\n"))
    cap = read_capture(str(tmp_path / "cap.jsonl"))
    big, small = [r for r in cap.records if r["type"] == "message"]
    assert "json" not in big and decode_bytes(big, "raw") == events(b"\n")[0][len(b"id: 1\ndata: "):-2]
    assert big["kind"] == "notification" and big["method"] == "notifications/message"
    assert big["transport"]["sse"]["bytes"] == len(events(b"\n")[0]) and small["json"]["params"]["data"] == "after"
    check = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "check", "--format", "json", str(tmp_path / "cap.jsonl")],
                           capture_output=True, timeout=120)
    report = orjson.loads(check.stdout)["captures"][0]
    codes = {c["code"] for c in report["codes"]}
    assert report["messages"] == 2 and report["complete"]
    assert not codes & {"capture.digest_mismatch", "capture.out_of_sequence", "capture.gap", "capture.incomplete"}, codes


def _comparable(path: Path) -> list[dict]:
    """The message records and end findings, without times (two runs differ there, in ports, in chunk
    framing, in how many reads brought an event (the tap reads more at a time while a body streams)
    and in when the client's connection closed)."""
    cap = read_capture(str(path))
    out = [{k: v for k, v in r.items() if k not in ("t_us", "latency_us")} for r in cap.records if r["type"] == "message"]
    for r in out:
        sse = r.get("transport", {}).get("sse")
        if sse is not None:
            sse["chunks"] = 0
        r["findings"] = [f if f["code"] != "sse.event_split_across_chunks" else {**f, "message": ""} for f in r.get("findings", [])]
    assert cap.end is not None
    codes = {k: v for k, v in cap.end["codes"].items() if not k.startswith("http.conn_")}     # how the client left: timing
    return [*out, codes, cap.end["pending"], cap.end["s2c"]["messages"]]


async def test_skeleton_analysis_records_what_the_full_parse_records(tmp_path: Path, monkeypatch):
    """The 3 MiB event analysed from a skeleton (its 3 MiB string never decoded)
    gives the records a full parse gives, and check --full agrees with them."""
    caps = []
    made = []
    real = skeleton._skeleton
    monkeypatch.setattr(skeleton, "_skeleton", lambda raw, long: made.append(real(raw, long)) or made[-1])
    for above in (1 << 20, 1 << 40):
        monkeypatch.setattr(skeleton, "SKELETON_ABOVE", above)
        d = tmp_path / str(above)
        d.mkdir()
        async with upstream_server(sse_upstream(b"\n", 65536)) as port, tap(d, upstream=f"http://127.0.0.1:{port}/mcp") as (url, _rec):
            got = await get_stream(url)
        assert got == b"".join(events(b"\n"))
        caps.append(d / "cap.jsonl")
    assert len(made) == 1 and type(made[0]["params"]["data"]) is skeleton.LongString      # the first run only
    assert _comparable(caps[0]) == _comparable(caps[1])
    full = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "check", "--full", "--format", "json", str(caps[0])],
                          capture_output=True, timeout=120)
    recorded = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "check", "--format", "json", str(caps[0])],
                              capture_output=True, timeout=120)
    assert orjson.loads(full.stdout)["captures"][0]["codes"] == orjson.loads(recorded.stdout)["captures"][0]["codes"]


async def test_a_large_request_body_sent_in_small_pieces_arrives_and_is_recorded_exactly(tmp_path: Path):
    """The tap reads a request body announced as large in large pieces (``http_io.ReadAhead``
    on the client socket); what the upstream gets and what the capture holds are unchanged."""
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": "put", "arguments": {"data": BLOB}}}).encode()
    received = bytearray()

    async def echo(stream: trio.abc.Stream) -> None:
        conn = h11.Connection(h11.SERVER)
        received.extend(await read_request(conn, stream))
        out = b'{"jsonrpc":"2.0","id":7,"result":{"content":[]}}'
        await stream.send_all(conn.send(h11.Response(status_code=200, headers=[("Content-Type", "application/json"),
                                                                               ("Content-Length", str(len(out)))]))
                              + conn.send(h11.Data(data=out)) + conn.send(h11.EndOfMessage()))
        await stream.aclose()

    async with upstream_server(echo) as port, tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp") as (url, _rec):
        host, rest = url.split("//")[1].split("/", 1)
        h, p = host.split(":")
        s = await trio.open_tcp_stream(h, int(p))
        c = h11.Connection(h11.CLIENT)
        await s.send_all(c.send(h11.Request(method="POST", target="/" + rest, headers=[
            ("Host", host), ("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream"),
            ("Content-Length", str(len(body)))])))
        for k in range(0, len(body), 8192):
            await s.send_all(c.send(h11.Data(data=body[k:k + 8192])))
            if k % (1 << 20) == 0:
                await trio.sleep(0.01)          # now and then slower than the read-ahead's wait
        c.send(h11.EndOfMessage())
        status, _ = await read_response(c, s)
        await s.aclose()
    assert status == 200 and bytes(received) == body
    cap = read_capture(str(tmp_path / "cap.jsonl"))
    req = next(r for r in cap.records if r["type"] == "message" and r["dir"] == "c2s")
    assert req["method"] == "tools/call" and req["id"] == 7
    assert (json.loads(decode_bytes(req, "raw")) if "json" not in req else req["json"])["params"]["arguments"]["data"] == BLOB
