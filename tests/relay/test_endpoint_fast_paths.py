"""The endpoint rewriter's line splitting (regex line ends) and its shortcut for
blocks without a data line give what the byte loop they replace gives."""

from __future__ import annotations

from hypothesis import given, settings
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
