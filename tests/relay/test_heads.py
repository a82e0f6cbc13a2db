"""relay/http/heads.py: heads built from parsed fields without re-validation
serialize exactly like h11's validating constructors, and a value h11 would
refuse is never let through."""

from __future__ import annotations

import h11
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcptap.relay.http import heads

TOKEN = st.text(alphabet="!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=12)
VALUE = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=0, max_size=20)
FIELDS = st.lists(st.tuples(TOKEN, VALUE).filter(lambda f: f[0].lower() not in ("host", "content-length", "transfer-encoding",
                                                                              "connection")), max_size=6)


def _parse_request(fields: list[tuple[str, str]]) -> h11.Request:
    wire = "POST /mcp?x=1 HTTP/1.1\r\nHost: a.example:8\r\n" + "".join(f"{n}: {v}\r\n" for n, v in fields)
    conn = h11.Connection(h11.SERVER)
    conn.receive_data((wire + "Content-Length: 2\r\n\r\n{}").encode("latin-1"))
    ev = conn.next_event()
    assert isinstance(ev, h11.Request)
    return ev


def _bytes(role: type[h11.CLIENT] | type[h11.SERVER], *events: h11.Event) -> bytes:
    conn = h11.Connection(role)
    out = b""
    if role is h11.SERVER:
        conn.receive_data(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        conn.next_event()
    for ev in events:
        out += conn.send(ev) or b""
    return out


@given(FIELDS)
def test_a_parsed_request_head_serializes_as_the_validated_one(fields: list[tuple[str, str]]) -> None:
    ev = _parse_request(fields)
    raw = ev.headers.raw_items()
    fast = heads.request(ev.method, ev.target, raw)
    slow = h11.Request(method=ev.method, target=ev.target, headers=raw)
    assert _bytes(h11.CLIENT, fast) == _bytes(h11.CLIENT, slow)


@given(FIELDS, st.sampled_from([200, 202, 404, 500]))
def test_a_parsed_response_head_serializes_as_the_validated_one(fields: list[tuple[str, str]], status: int) -> None:
    wire = f"HTTP/1.1 {status} Whatever It Says\r\n" + "".join(f"{n}: {v}\r\n" for n, v in fields) + "Content-Length: 0\r\n\r\n"
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="GET", target="/", headers=[("Host", "a")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(wire.encode("latin-1"))
    ev = conn.next_event()
    assert isinstance(ev, h11.Response)
    raw = ev.headers.raw_items()
    fast = heads.response(ev.status_code, ev.reason, raw)
    slow = h11.Response(status_code=ev.status_code, headers=raw, reason=ev.reason)
    assert _bytes(h11.SERVER, fast) == _bytes(h11.SERVER, slow)


def test_framing_fields_are_still_checked_and_the_target_validated() -> None:
    with pytest.raises(h11.LocalProtocolError):
        heads.request(b"POST", b"/", [(b"Host", b"a"), (b"Content-Length", b"1"), (b"Content-Length", b"2")])
    with pytest.raises(h11.LocalProtocolError):
        heads.request(b"POST", b"/a b", [(b"Host", b"a")])


def test_end_without_trailers_is_the_plain_end() -> None:
    assert heads.end([]) is heads.END
    assert heads.end([(b"X-Trailer", b"1")]).headers.raw_items() == [(b"X-Trailer", b"1")]


@pytest.mark.parametrize("value, ok", [(b"127.0.0.1:8080", True), (b"[::1]:9", True), (b"bad\r\nX-Evil: 1", False), (b"a\x00b", False)])
def test_a_value_the_relay_writes_itself_is_checked_once(value: bytes, ok: bool) -> None:
    assert heads.valid_value(value) is ok
