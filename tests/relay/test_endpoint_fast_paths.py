"""The endpoint rewriter's line splitting (regex line ends) and its shortcut for
blocks without a data line give what the byte loop they replace gives."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcptap.relay.http.endpoint import EndpointRewriter, _split_lines


def _split_by_bytes(block: bytes) -> list[tuple[bytes, bytes]]:
    """The byte loop ``_split_lines`` was (reference)."""
    out: list[tuple[bytes, bytes]] = []
    i = start = 0
    n = len(block)
    while i < n:
        b = block[i]
        if b == 0x0D:
            end = i + 2 if i + 1 < n and block[i + 1] == 0x0A else i + 1
            out.append((block[start:i], block[i:end]))
            i = start = end
        elif b == 0x0A:
            out.append((block[start:i], block[i:i + 1]))
            i = start = i + 1
        else:
            i += 1
    if start < n:
        out.append((block[start:], b""))
    return out


PIECES = st.lists(st.sampled_from([b"\r", b"\n", b"\r\n", b"data", b":", b" ", b"event: endpoint", b"x", b"data: /m?s=1",
                                   b"http://up:9/messages", b"\xef\xbb\xbf", b"dat", b"a"]), max_size=14)


@settings(max_examples=500, deadline=None)
@given(PIECES)
def test_split_lines_is_the_byte_loop(parts: list[bytes]) -> None:
    block = b"".join(parts)
    assert _split_lines(block) == _split_by_bytes(block)


@settings(max_examples=500, deadline=None)
@given(PIECES)
def test_a_block_is_rewritten_as_without_the_shortcut(parts: list[bytes]) -> None:
    block = b"".join(parts)
    rw = EndpointRewriter(lambda text: "http://tap:1" + text)
    got = rw._rewrite_block(block)
    # the reference: the single data line found by the split, as _rewrite_block does past its shortcut
    lines = _split_by_bytes(block)
    data = [k for k, (c, _) in enumerate(lines) if c.split(b":", 1)[0] == b"data"]
    if len(data) != 1:
        assert got is None
    else:
        assert b"data" in block


# -- the searches for endpoint lines and for the end of a held block, and the last block's cache -------
class _Uncached(EndpointRewriter):
    def _release(self, rewrite: bool) -> bytes:
        self._last = None
        return super()._release(rewrite)


_LINES = st.lists(st.tuples(
    st.sampled_from([b"", b"", b"event: endpoint", b"event:endpoint", b"event: endpointx", b"xevent: endpoint", b"data: http://up:9/m",
                     b"data: /m?s=1", b": c", b"event: message", b"\xef\xbb\xbf", b'data: {"endpoint":1}', b"endpoint", b"data:",
                     b"x" * 40]),
    st.sampled_from([b"\n", b"\r", b"\r\n", b""])), max_size=40)
_STREAM = _LINES.map(lambda lines: b"".join(c + e for c, e in lines))


def _run(rw: EndpointRewriter, chunks: list[bytes]) -> tuple[list[bytes], list[tuple[str, str]], int]:
    return [rw.feed(c) for c in chunks] + [rw.flush()], rw.rewrites, rw.gave_up


@settings(max_examples=1500, deadline=None)
@example(data=b"event: endpoint\ndata: http://up:9/a\n\ndata: /b\n\r\r", cuts=[], limit=1 << 16, loop=0)   # the first blank line of three kinds
@example(data=b"event: endpoint\r\nx\r\nxx\r\n\r\n", cuts=[], limit=18, loop=0)                           # a CR LF at the limit
@given(data=_STREAM, cuts=st.lists(st.integers(0, 700), max_size=10), limit=st.one_of(st.integers(1, 300), st.just(1 << 16)), loop=st.integers(0, 3))
def test_the_searches_forward_what_the_line_loop_forwards(data: bytes, cuts: list[int], limit: int, loop: int) -> None:
    """Any chunking and hold limit: each feed returns what the line loop alone
    (no searches, no cache) returns, with the same rewrites and give-ups."""
    from mcptap.relay.http import endpoint
    cuts = sorted({c for c in cuts if 0 < c < len(data)})
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    fn = lambda text: ("http://tap:1" + text[len("http://up:9"):]) if text.startswith("http://up:9") else None  # noqa: E731
    old = endpoint.HOLD_LIMIT, endpoint.JUMP, endpoint._LOOP_LINES
    try:
        endpoint.HOLD_LIMIT, endpoint._LOOP_LINES = limit, loop
        endpoint.JUMP = False
        want = _run(_Uncached(fn), chunks)
        endpoint.JUMP = True
        got = _run(EndpointRewriter(fn), chunks)
    finally:
        endpoint.HOLD_LIMIT, endpoint.JUMP, endpoint._LOOP_LINES = old
    assert got == want
