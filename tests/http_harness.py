"""Drive a handed HTTP wire transcript through the real HTTP tap.

A fake upstream (trio TCP server) plays the server side of ``wire*.jsonl``
byte for byte; fake clients play the client side; the real ``HttpTap`` with a
real Recorder sits between them. After each wire event the harness waits until
the tap has relayed it and attributes the capture records written meanwhile to
that event, so expectations can be checked at the wire seq where they belong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import trio

from casefiles import Wire
from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.model import Direction
from mcptap.protocol.pairing import Pending
from mcptap.recorder import Recorder
from mcptap.transport.http import HttpTap, HttpTapConfig

TIMEOUT = 5.0


@dataclass
class Peer:
    """One TCP stream with a background reader."""
    stream: trio.SocketStream
    buf: bytearray = field(default_factory=bytearray)
    eof: bool = False
    closed: bool = False
    consumed: int = 0            # upstream side: request bytes already matched

    async def read_loop(self) -> None:
        try:
            while True:
                data = await self.stream.receive_some(65536)
                if not data:
                    break
                self.buf += data
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        self.eof = True

    async def close(self) -> None:
        self.closed = True
        await trio.aclose_forcefully(self.stream)


async def wait_until(cond, what: str, timeout: float = TIMEOUT) -> None:
    with trio.move_on_after(timeout):
        while not cond():
            await trio.sleep(0.002)
        return
    raise AssertionError(f"timed out waiting for {what}")


async def quiet(rec: Recorder, ms: float = 30) -> None:
    """Wait until the recorder wrote nothing for ``ms`` milliseconds."""
    while True:
        before = rec.seq
        await trio.sleep(ms / 1000)
        if rec.seq == before:
            return


@dataclass
class Result:
    records: list[dict[str, Any]]
    by_seq: dict[int, list[dict[str, Any]]]
    client_bytes: dict[int, bytes]          # wire conn -> bytes the client received
    upstream_wrote: dict[int, bytes]        # wire conn -> bytes the fake upstream sent
    upstream_got: dict[int, bytes]          # wire exchange -> request bytes the upstream received
    end: dict[str, Any]


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n" % len(data) + data + b"\r\n"


def _assume(rec: Recorder, w: Wire) -> None:
    ctx = w.context or {}
    if "phase" not in ctx and "protocolVersion" not in ctx:
        return
    phase = ctx.get("phase", "operating")
    sid = ctx.get("sessionId")
    rec.assume(phase="initialized" if phase.startswith("initializ") else phase, revision=ctx.get("protocolVersion"), session=sid)
    for p in ctx.get("pending_s2c_requests", ()):
        rec.annotator.pairing.request(Pending(0, 0, Direction.S2C, p["id"], p.get("method"), sid), True)


async def run_wire(w: Wire, path: str, **cfg: Any) -> Result:
    ups: list[Peer] = []
    clients: dict[int, Peer] = {}
    up_of: dict[int, Peer] = {}
    wrote: dict[int, bytearray] = {}
    got: dict[int, bytes] = {}
    framing: dict[int, str] = {}
    owner: dict[int, int] = {}
    rec = Recorder(CaptureWriter.open(path), "http", {"url": "case"}, clock=monotonic_us_clock(), started=utc_timestamp())
    _assume(rec, w)
    async with trio.open_nursery() as nursery:
        async def up_handler(stream: trio.SocketStream) -> None:
            p = Peer(stream)
            ups.append(p)
            await p.read_loop()

        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        await nursery.start(trio.serve_listeners, up_handler, listeners)
        conf = {"keep_host": True, **cfg}
        tap = HttpTap(HttpTapConfig(upstream=conf.pop("upstream", f"http://127.0.0.1:{port}/mcp"), **conf), rec)
        url = await nursery.start(tap.serve)
        tap_port = int(url.split(":")[2].split("/")[0])

        for e in w.events:
            before = rec.seq
            k, conn = e.kind, e.raw.get("conn")
            if k == "request":
                if conn not in clients or clients[conn].closed:
                    s = await trio.open_tcp_stream("127.0.0.1", tap_port)
                    clients[conn] = Peer(s)
                    nursery.start_soon(clients[conn].read_loop)
                await clients[conn].stream.send_all(e.data)

                def arrived(raw=e.data) -> bool:
                    return any(bytes(u.buf[u.consumed:]) == raw for u in ups if not u.closed)
                await wait_until(arrived, f"request of wire seq {e.seq} at the upstream")
                u = next(u for u in ups if not u.closed and bytes(u.buf[u.consumed:]) == e.data)
                got[e.raw["exchange"]] = bytes(u.buf[u.consumed:])
                u.consumed = len(u.buf)
                if up_of.get(conn) is not u:
                    up_of[conn] = u
                    wrote[conn] = bytearray() if conn not in wrote else wrote[conn]
            elif k in ("response_head", "response_body", "response_end"):
                u = up_of[conn]
                if k == "response_head":
                    framing[e.raw["exchange"]] = e.raw.get("framing", "length")
                    out = e.data
                elif k == "response_body":
                    out = _chunk(e.data) if framing.get(e.raw["exchange"]) == "chunked" else e.data
                else:
                    out = b"0\r\n\r\n" if framing.get(e.raw["exchange"]) == "chunked" else b""
                if out:
                    await u.stream.send_all(out)
                    wrote[conn] += out
                    target = bytes(wrote[conn])
                    await wait_until(lambda c=clients[conn], t=target: bytes(c.buf) == t, f"wire seq {e.seq} at the client")
            elif k == "conn_close":
                if e.raw.get("by") == "server":
                    u = up_of[conn]
                    await u.close()
                    await wait_until(lambda c=clients[conn]: c.eof or True, "close")
                else:
                    c = clients[conn]
                    await c.close()
                    u = up_of.get(conn)
                    if u is not None:
                        await wait_until(lambda u=u: u.eof, f"upstream EOF after client close (wire seq {e.seq})")
            await quiet(rec)
            for s in range(before + 1, rec.seq + 1):
                owner[s] = e.seq
        for c in clients.values():
            await c.close()
        await quiet(rec)
        last = w.events[-1].seq
        for s in range(1, rec.seq + 1):
            owner.setdefault(s, last)
        nursery.cancel_scope.cancel()
    end = rec.close()
    cap = read_capture(path)
    by_seq: dict[int, list[dict[str, Any]]] = {}
    for r in cap.records:
        if r["type"] == "end":
            by_seq.setdefault(last, []).append({"type": "end", "findings": r.get("unanswered", [])})
            continue
        s = owner.get(r.get("seq"))
        if s is not None:
            by_seq.setdefault(s, []).append(r)
    return Result(cap.records, by_seq, {k: bytes(v.buf) for k, v in clients.items()},
                  {k: bytes(v) for k, v in wrote.items()}, got, end)
