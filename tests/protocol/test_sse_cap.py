"""An event-stream block longer than the parser's ``max_block`` is not held
(protocol/sse.py): its first bytes and size come out as one event with
``dropped`` set, the offsets of every event still tile the stream, and the
parser's buffer never grows past the cap, whatever the chunking."""

from __future__ import annotations

import pytest

from mcptap.protocol.sse import SSEParser
from mcptap.protocol.sse_rules import sse_findings

LONG = b"id: 7\ndata: " + b"A" * 5000 + b"\r\n\r\n"
COMMENTS = b": keep\n" * 3000 + b"\n"
STREAM = b'data: {"a":1}\n\n' + LONG + COMMENTS + b"data: 2\r\n\r\n"


def _parse(stream: bytes, size: int, lazy: int | None) -> tuple[list, int]:
    p = SSEParser(lazy, max_block=1000)
    out, peak = [], 0
    for i in range(0, len(stream), size):
        out += p.receive_data(stream[i:i + size])
        peak = max(peak, p.buffered)
    return out + p.receive_data(b""), peak


@pytest.mark.parametrize("size", [1, 3, 7, 64, 999])
@pytest.mark.parametrize("lazy", [None, 100])
def test_a_block_past_the_cap_is_counted_not_held(size: int, lazy: int | None) -> None:
    evs, peak = _parse(STREAM, size, lazy)
    assert peak <= 1000 + size
    assert evs[0].start == 0 and evs[-1].end == len(STREAM)
    assert all(a.end == b.start for a, b in zip(evs, evs[1:], strict=False))
    big = [e for e in evs if e.dropped]
    assert len(big) == 2 and all(len(e.raw) <= 256 and e.data == "" and not e.priming for e in big)
    assert big[0].id == "7" and big[0].end - big[0].start in (len(LONG) - 1, len(LONG))    # the last LF may go with the next block
    assert evs[0].data == '{"a":1}' and [e.data for e in evs if e.data][-1] == "2"
    assert "sse.event_too_large" in [f.code for f in sse_findings(big[0])]


def test_an_endless_line_stays_bounded_and_comes_out_unterminated_at_eof() -> None:
    p = SSEParser(100, max_block=1000)
    p.receive_data(b'data: {"x":"')
    for _ in range(200):
        assert p.receive_data(b"A" * 512) == []
        assert p.buffered <= 1000 + 512
    (ev,) = p.receive_data(b"")
    assert not ev.terminated and ev.dropped and ev.end == 12 + 200 * 512
    assert {"sse.event_too_large", "sse.unterminated_event_at_eof"} <= {f.code for f in sse_findings(ev)}


def test_blocks_under_the_cap_are_unchanged() -> None:
    evs, _ = _parse(STREAM, 7, None)
    want, _ = (SSEParser().receive_data(STREAM) + [], 0)
    assert [e.data for e in want if e.data] == ['{"a":1}', "A" * 5000, "2"]
    assert [e.data for e in evs if e.data] == ['{"a":1}', "2"]
