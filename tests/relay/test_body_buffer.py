"""relay/http/body_buffer.py: what was appended comes back whole, once."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcptap.relay.http.body_buffer import BodyBuffer


@given(st.lists(st.binary(max_size=50), max_size=10), st.integers(0, 100))
def test_take_value_head(chunks: list[bytes], n: int) -> None:
    b = BodyBuffer()
    assert not b and len(b) == 0 and b.take() == b""
    for c in chunks:
        b += c
    whole = b"".join(chunks)
    assert len(b) == len(whole) and bool(b) == bool(whole)
    assert b.head(n) == whole[:n] and b.value() == whole
    taken = b.take()
    assert type(taken) is bytes and taken == whole
    assert not b and b.take() == b""
    b += b"again"
    assert b.take() == b"again" and taken == whole
