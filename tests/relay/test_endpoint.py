"""The legacy endpoint rewriter: only the endpoint event's data changes, nothing
else is held back, any chunking gives the same output."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.relay.http.endpoint import HOLD_LIMIT, EndpointRewriter

UP = "http://10.0.0.7:9000"


def rw(data: str) -> str | None:
    return "http://127.0.0.1:5555" + data[len(UP):] if data.startswith(UP) else None


def run(chunks, rewrite=rw):
    r = EndpointRewriter(rewrite)
    return b"".join(r.feed(c) for c in chunks) + r.flush(), r


def test_absolute_endpoint_rewritten_rest_untouched():
    stream = b"event: endpoint\ndata: http://10.0.0.7:9000/messages/?session_id=1\n\nevent: message\ndata: {}\n\n"
    out, r = run([stream])
    assert out == stream.replace(b"http://10.0.0.7:9000", b"http://127.0.0.1:5555")
    assert r.rewrites == [(UP + "/messages/?session_id=1", "http://127.0.0.1:5555/messages/?session_id=1")]


def test_relative_endpoint_and_sse_starlette_layout_unchanged():
    stream = b"id: 1\r\nevent: endpoint\r\ndata: /messages/?session_id=9\r\n\r\n"
    out, r = run([stream])
    assert out == stream and r.rewrites == []


def test_crlf_and_field_order_kept_when_rewriting():
    stream = b": hi\r\nid: 7\r\nevent:endpoint\r\ndata:http://10.0.0.7:9000/m\r\nretry: 5\r\n\r\n"
    out, _ = run([stream])
    assert out == b": hi\r\nid: 7\r\nevent:endpoint\r\ndata:http://127.0.0.1:5555/m\r\nretry: 5\r\n\r\n"


def test_only_the_endpoint_block_is_held():
    r = EndpointRewriter(rw)
    # everything up to and including the event line goes out at once
    assert r.feed(b"data: x\n\nevent: endpoint\n") == b"data: x\n\nevent: endpoint\n"
    assert r.feed(b"data: http://10.0.0.7:9000/m\n") == b""          # held until the blank line
    assert r.feed(b"\n") == b"data: http://127.0.0.1:5555/m\n\n"
    assert r.feed(b"data: big streaming line") == b"data: big streaming line"  # not held


def test_oversized_endpoint_block_released_unchanged():
    r = EndpointRewriter(rw)
    big = b"data: " + b"x" * (HOLD_LIMIT + 10)
    out = r.feed(b"event: endpoint\n") + r.feed(big)
    assert out == b"event: endpoint\n" + big and r.gave_up == 1


def test_unfinished_block_released_at_flush():
    out, r = run([b"event: endpoint\ndata: http://10.0.0.7:9000/m\n"])
    assert out == b"event: endpoint\ndata: http://10.0.0.7:9000/m\n" and r.rewrites == []


_parts = st.lists(st.sampled_from([b"event: endpoint", b"event: message", b"data: http://10.0.0.7:9000/p?q=1", b"data: /rel",
                                   b"data: {}", b"id: 3", b": c", b"\n", b"\r", b"\r\n", b"\xef\xbb\xbf", b"x"]), max_size=30).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(stream=_parts, cuts=st.lists(st.integers(0, 400), max_size=10))
def test_chunking_independent_and_identity_without_rewrite(stream, cuts):
    cuts = sorted({c for c in cuts if 0 < c < len(stream)})
    chunks = [stream[a:b] for a, b in zip([0] + cuts, cuts + [len(stream)], strict=False)]
    whole, _ = run([stream])
    assert run(chunks)[0] == whole
    assert run(chunks, rewrite=lambda d: None)[0] == stream
    assert whole.replace(b"http://127.0.0.1:5555", b"http://10.0.0.7:9000") == stream
