"""``h11_fields`` answers as h11's own functions do, for any head h11 accepts:
``get_comma_header`` per name, ``_keep_alive``, ``has_expect_100_continue`` and
``_body_framing`` (the reader or writer ``_get_io_object`` makes from it)."""

from __future__ import annotations

from typing import Any

import h11
from h11._connection import _body_framing, _keep_alive
from h11._headers import get_comma_header, has_expect_100_continue
from h11._readers import READERS
from h11._writers import WRITERS
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.relay.http import h11_fields as hf

NAMES = st.sampled_from([b"Connection", b"connection", b"Transfer-Encoding", b"Content-Length", b"Expect", b"EXPECT",
                         b"Upgrade", b"X-A", b"Keep-Alive"])
VALUES = st.sampled_from([b"close", b"Close", b"keep-alive, close", b" , ,", b"chunked", b"gzip, chunked", b"3", b"0",
                          b"100-continue", b"100-Continue, x", b"websocket", b"", b"a,b , c"])


def _io(x: Any) -> Any:
    return (type(x), vars(x)) if hasattr(x, "__dict__") else x


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.tuples(NAMES, VALUES), max_size=5), st.sampled_from([b"1.1", b"1.0"]), st.booleans(),
       st.sampled_from([b"GET", b"HEAD", b"POST", b"CONNECT", None]), st.sampled_from([200, 204, 304, 404, 201]))
def test_fields_answer_as_h11(pairs: list[tuple[bytes, bytes]], version: bytes, response: bool, method: Any,
                              status: int) -> None:
    try:
        ev: Any = (h11.Response(status_code=status, headers=pairs, http_version=version) if response
                   else h11.Request(method=method or b"GET", target=b"/", headers=[(b"Host", b"x"), *pairs], http_version=version))
    except h11.LocalProtocolError:
        return
    f = hf.fields(ev.headers)
    for name in (b"connection", b"transfer-encoding", b"content-length", b"expect", b"upgrade"):
        assert f.get(name, []) == get_comma_header(ev.headers, name)
    assert hf.fields(ev.headers) is f           # the last list read is remembered
    assert hf.keep_alive(ev, f) == _keep_alive(ev)
    if not response:
        assert hf.expects_continue(ev, f) == has_expect_100_continue(ev)
        method = ev.method
    try:
        want: Any = _body_framing(method, ev)
    except AssertionError:
        want = None
    for table in (READERS, WRITERS):
        got = hf.body_io(method, ev, f, table)
        assert _io(got) == (None if want is None else _io(table[h11.SEND_BODY][want[0]](*want[1])))
    if response:
        assert hf.framing(method, ev, f) == (None if want is None else want[0])
