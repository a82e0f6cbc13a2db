"""A multi-MiB SSE event through the sans-IO tap (relay, observer, recorder,
capture writer): the recorder holds it about once, also when its bytes are
not the SDK layout (CR LF line ends, as sse-starlette writes them), whose
record keeps the event's exact text (``transport.sse.raw``) beside the
payload. That text was decoded whole, joined from three parts and encoded
into the record's line whole: ~4.4x the event held at once (283 MiB for a
64 MiB event in the tap's recorder process); now it is written in pieces
(``utf8.LazyText``, ``capture.pieces``).

Memory is measured with tracemalloc over the tap's work (the input exists
before; what reaches the client is only counted). ``pieces.PIECE`` is lowered
so that orjson's reservation for one piece (~16x a string's length, pages
never touched) stays small beside the figures compared."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from mcptap.capture import pieces
from mcptap.capture.format import decode_bytes
from tests.sansio_tap import SansIoTap, post

MIB = 1 << 20
SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
CALL = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}'


class Counted:
    """Stands in for ``SansIoTap.to_client``: counts the bytes, holds none."""

    def __init__(self) -> None:
        self.n = 0

    def __iadd__(self, data: bytes) -> Counted:
        self.n += len(data)
        return self


def _payload(n: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "é" + "x" * n}]}}).encode()


@pytest.mark.parametrize("eol", [b"\r\n", b"\n"])
def test_a_big_event_is_held_about_once_whatever_its_line_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, eol: bytes) -> None:
    monkeypatch.setattr(pieces, "PIECE", 64 << 10)
    payload = _payload(8 * MIB)
    event = b"id: 1" + eol + b"data: " + payload + eol + eol
    body = b"%x\r\n" % len(event) + event + b"\r\n0\r\n\r\n"
    reads = [SSE_HEAD] + [body[k:k + (256 << 10)] for k in range(0, len(body), 256 << 10)]
    t = SansIoTap(tmp_path / "c.jsonl")
    t.to_client = Counted()         # type: ignore[assignment]
    t.client(post(b"/mcp", CALL))
    tracemalloc.start()
    try:
        for data in reads:
            t.upstream(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert t.to_client.n > len(event)
    # the event held once (its spill's slack and one piece's reservation beside it);
    # the CR LF event's whole text and line made it ~19x (orjson's reservation counts here)
    assert peak < 2 * len(event), (peak, len(event))
    msg = next(r for r in t.records() if r["type"] == "message" and r["dir"] == "s2c")
    assert decode_bytes(msg, "raw") == payload
    sse = msg["transport"]["sse"]
    # the exact bytes of a non-SDK layout are kept; the SDK layout is not stored twice
    assert sse.get("raw", "").encode() == (event if eol == b"\r\n" else b"")
