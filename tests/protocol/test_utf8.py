"""protocol/utf8.is_utf8 answers what a whole decode answers, wherever the
pieces cut (a multi-byte character split across pieces included)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcptap.protocol import utf8


def _whole(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.parametrize("piece", [1, 2, 3, 5, 1 << 20])
@given(data=st.binary(max_size=64) | st.text(max_size=32).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_is_utf8_equals_a_whole_decode_at_any_piece_size(piece: int, data: bytes) -> None:
    old = utf8.PIECE
    utf8.PIECE = piece
    try:
        assert utf8.is_utf8(data) == _whole(data)
        assert utf8.is_utf8(memoryview(data)) == _whole(data)
    finally:
        utf8.PIECE = old


def test_a_character_cut_at_the_end_is_not_utf8() -> None:
    assert utf8.is_utf8("é€😀".encode())
    assert not utf8.is_utf8("é€😀".encode()[:-1])
    assert not utf8.is_utf8(b"\xed\xa0\x80")          # an encoded surrogate is not UTF-8
