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


def _outcome(build: object) -> tuple[object, ...]:
    try:
        ev = build()        # type: ignore[operator]
    except h11.LocalProtocolError as exc:
        return ("error", type(exc), str(exc), exc.error_status_hint)
    assert type(ev) is h11.Request
    return ("ok", ev.method, ev.target, ev.http_version, ev.headers._full_items, ev)


NAMES = st.sampled_from([b"Host", b"host", b"HOST", b"Content-Length", b"content-length", b"Transfer-Encoding", b"Accept",
                         b"X-A", b"Connection"])
RAW_VALUES = st.sampled_from([b"", b"a", b"127.0.0.1:9", b"2", b"02", b"2, 2", b"1, 2", b"-1", b"chunked", b"Chunked", b"gzip",
                              b"1" * 21, b"x y"])


@given(st.sampled_from([b"POST", b"GET", b"DELETE", b"PO ST", b"", b"G\x00T"]),
       st.sampled_from([b"/mcp", b"/mcp?x=1", b"*", b"http://a/b", b"/a b", b"", b"/\x7f"]),
       st.lists(st.tuples(NAMES, RAW_VALUES), max_size=6))
def test_the_request_head_is_the_event_h11s_constructor_builds(method: bytes, target: bytes,
                                                              fields: list[tuple[bytes, bytes]]) -> None:
    # heads.request skips h11.Request's constructor: same fields, same checks in the same order, same errors
    fast = _outcome(lambda: heads.request(method, target, fields))
    slow = _outcome(lambda: h11.Request(method=method, target=target, headers=fields, _parsed=True))
    assert fast[:-1] == slow[:-1] if fast[0] == "ok" else fast == slow
    if fast[0] == "ok":
        assert fast[-1] == slow[-1]                 # the frozen dataclass's own equality, every field
        assert _bytes(h11.CLIENT, fast[-1]) == _bytes(h11.CLIENT, slow[-1])   # type: ignore[arg-type]
