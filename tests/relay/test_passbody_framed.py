"""``passbody.framed`` frames a chunk itself inside a chunked body (no h11
event machinery): for any body writer, state and pieces, the same bytes, the
same states after and the same errors as h11's ``send_with_data_passthrough``."""

from __future__ import annotations

from typing import Any

import h11
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.relay.http import passbody

HEADS: dict[str, tuple[bytes, list[tuple[str, str]]]] = {
    "chunked": (b"1.1", []),                                   # HTTP/1.1 client, no length: h11 chunks the body
    "length": (b"1.1", [("Content-Length", "70000")]),
    "http10": (b"1.0", []),                                    # HTTP/1.0 client: the body runs to the close
}


def _client(kind: str) -> h11.Connection:
    """A client connection sending a request body (``conn.py``'s upstream side)."""
    conn = h11.Connection(h11.CLIENT)
    headers = [("Host", "x")] + ([("Transfer-Encoding", "chunked")] if kind == "chunked" else [("Content-Length", "70000")])
    conn.send(h11.Request(method="POST", target="/mcp", headers=headers))
    return conn


def _server(kind: str, respond: bool) -> h11.Connection:
    version, headers = HEADS[kind]
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(b"GET /mcp HTTP/%s\r\nHost: x\r\n\r\n" % version)
    assert type(conn.next_event()) is h11.Request
    if respond:
        conn.send(h11.Response(status_code=200, headers=headers))
    return conn


def _send(conn: h11.Connection, data: bytes, fast: bool) -> tuple[str, Any]:
    try:
        out = passbody.framed(conn, data) if fast else (conn.send_with_data_passthrough(h11.Data(data=data)) or [])
    except h11.LocalProtocolError as exc:
        return "error", str(exc)
    return "ok", b"".join(out)


@given(kind=st.sampled_from(["chunked", "length"]), end_first=st.booleans(), sizes=st.lists(st.integers(0, 40_000), max_size=5))
@settings(max_examples=100, deadline=None)
def test_framed_is_what_h11_sends_for_a_request_body(kind, end_first, sizes):
    fast, slow = _client(kind), _client(kind)
    if end_first and kind == "chunked":
        for c in (fast, slow):
            c.send(h11.EndOfMessage())
    for i, n in enumerate(sizes):
        data = bytes([i % 251]) * n
        assert _send(fast, data, True) == _send(slow, data, False)
        assert (fast.our_state, fast.their_state) == (slow.our_state, slow.their_state)


@given(kind=st.sampled_from(sorted(HEADS)), respond=st.booleans(), end_first=st.booleans(),
       sizes=st.lists(st.integers(0, 40_000), max_size=5))
@settings(max_examples=200, deadline=None)
def test_framed_is_what_h11_sends(kind, respond, end_first, sizes):
    fast, slow = _server(kind, respond), _server(kind, respond)
    if respond and end_first and kind != "length":
        for c in (fast, slow):
            c.send(h11.EndOfMessage())
    for i, n in enumerate(sizes):
        data = bytes([i % 251]) * n
        assert _send(fast, data, True) == _send(slow, data, False)
        assert (fast.our_state, fast.their_state) == (slow.our_state, slow.their_state)


def test_a_chunk_is_framed_without_h11_when_the_writer_is_chunked(monkeypatch):
    conn = _server("chunked", True)
    data = b"x" * 70_000

    def refuse(*a: Any) -> Any:
        raise AssertionError("h11's event machinery ran")

    monkeypatch.setattr(conn, "send_with_data_passthrough", refuse)
    pieces = passbody.framed(conn, data)
    assert pieces == [b"11170\r\n", data, b"\r\n"] and pieces[1] is data        # the body itself, for writev
    with pytest.raises(AssertionError):
        passbody.framed(_patched(_server("length", True), refuse), data)        # other writers: h11's


def _patched(conn: h11.Connection, fn: Any) -> h11.Connection:
    conn.send_with_data_passthrough = fn  # type: ignore[method-assign]
    return conn
