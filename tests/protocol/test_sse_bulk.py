"""A lazy parser's block of several data lines that are together longer than
``lazy_above`` (protocol/sse.py, ``Block.take``): its values are taken out of
the parser's buffer as they complete, joined once as ``data_bytes`` and never
decoded, so a 64 MiB event over many ``data:`` lines is held about once (it
was decoded line by line, joined as text, then encoded: ~4x). Properties:
whatever the chunking, the events decode to the full parser's, and a capped
parser (``max_block``) counts the same blocks."""

from __future__ import annotations

import dataclasses
import tracemalloc
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcptap.protocol import sse_canonical
from mcptap.protocol.sse import SSEParser
from tests.protocol import test_sse

MIB = 1 << 20


@pytest.mark.parametrize(("view", "group"), [(4, 16), (1, 1), (1 << 30, 1 << 30)])
def test_any_piece_sizes_of_the_raw_text_give_the_same_text(monkeypatch: pytest.MonkeyPatch, view: int, group: int) -> None:
    """The non-canonical event's text parts (views of long values, short
    parts joined) decode to the event's whole text for any sizes."""
    monkeypatch.setattr(sse_canonical, "_VIEW", view)
    monkeypatch.setattr(sse_canonical, "_GROUP", group)
    test_sse.test_lazy_events_decode_to_the_full_parsers_events()


def _stream(lines: int, width: int, eol: bytes) -> tuple[bytes, bytes]:
    values = [b'"' + (b"%07d" % k) + b"y" * (width - 10) + b'",' for k in range(lines)]
    values[-1] = values[-1][:-1]
    body = [b"["] + values + [b"]"]
    return b"\n".join(body), b"id: 3" + eol + b"".join(b"data: " + v + eol for v in body) + eol


@pytest.mark.parametrize("eol", [b"\n", b"\r\n"])
def test_an_event_of_many_data_lines_is_held_once(eol: bytes) -> None:
    payload, stream = _stream(256, 16 << 10, eol)            # 4 MiB in 16 KiB lines
    p = SSEParser(lazy_above=MIB)
    out = []
    tracemalloc.start()
    try:
        for k in range(0, len(stream), 65536):
            out += p.receive_data(stream[k:k + 65536])
            assert len(p._buf) <= MIB + 2 * 65536     # past lazy_above, the lines leave the buffer as they complete
        (ev,) = out + p.receive_data(b"")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.3 * len(stream), peak             # decoded line by line and joined: ~3x
    assert ev.data_bytes == payload and ev.data == "" and ev.data_lines == 258 and (ev.start, ev.end) == (0, len(stream))
    full = SSEParser().receive_data(stream)[0]
    assert sse_canonical.decoded(ev) == dataclasses.replace(full, raw=stream, chunks=ev.chunks)
    got, _, text = sse_canonical.big_data(ev)
    assert got is ev.data_bytes and (text is None) == (eol == b"\n") and (text is None or str(text) == stream.decode())


@settings(max_examples=400, deadline=None)
@example(data=b"data: data: \n\n", cuts=[], above=0, cap=8)
@given(data=test_sse._lazy_mixed, cuts=st.lists(st.integers(0, 400), max_size=8), above=st.integers(0, 40),
       cap=st.integers(1, 120))
def test_a_capped_lazy_parser_counts_the_blocks_of_a_capped_full_parser(data: bytes, cuts: list[int], above: int, cap: int) -> None:
    chunks = test_sse.split_at(data, cuts)
    lazy, full = SSEParser(above, max_block=cap), SSEParser(None, max_block=cap)
    got, want = [], []
    for c in chunks + [b""]:
        got += lazy.receive_data(c)
        want += full.receive_data(c)
        assert lazy.buffered <= cap + len(c)
    assert [(e.start, e.end, e.terminated) for e in got] == [(e.start, e.end, e.terminated) for e in want]
    # a block past the cap is held by neither (``dropped`` counts the bytes past its kept prefix; a
    # lazy event's long values are not in its raw but in data_bytes: b"data: data: \n\n", cap 8)
    assert [_size(e) > cap for e in got] == [_size(e) > cap for e in want]


def _size(e: Any) -> int:
    """The bytes of an event's block: what it kept, the values cut out of ``raw``, what it dropped."""
    return e.dropped + len(e.raw) + (len(e.data_bytes) if e.data_bytes is not None else 0)
