"""Frames and findings of a stdio stream depend on its bytes only, never on
how reads cut it: the live tap reads whatever the pipe holds, ``check --full``
re-frames stored records, and both must judge the same stream the same way.
Runs of blank or non-JSON lines used to be merged per read, so ``\\n\\n\\n``
read at once gave one ``framing.empty_line`` and read byte by byte three."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.model import Direction
from mcptap.protocol.annotate import Annotator
from mcptap.protocol.framing import NewlineFramer

lines = st.one_of(
    st.sampled_from([
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},'
        b'"clientInfo":{"name":"c","version":"1"}}}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
        b'{"jsonrpc":"2.0","id":1,"result":{}}\r\n',
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
        b'{\n  "jsonrpc": "2.0",\n  "id": 2,\n  "result": {}\n}\n',
        b'\xef\xbb\xbf{"jsonrpc":"2.0","method":"x"}\n',
        b'{"a":"\xe9\x93"}\n',
        b"banner text\n", b"log: \xff\xfe bad utf-8\n", b"\xef\xbb\xbfbom banner\r\n",
        b"\n", b"\r\n", b"  \t\n", b"{ broken\n", b"[1,2]\n", b"}\n",
    ]),
    st.binary(max_size=24),
)


def judged(chunks: list[bytes], direction: Direction) -> list[tuple[Any, ...]]:
    """Each frame of the stream as (raw, offset, terminated, lines, invalid_utf8,
    findings as JSON), framed from ``chunks`` and annotated in order."""
    framer, ann = NewlineFramer(), Annotator("stdio")
    frames = [f for c in chunks for f in framer.receive_data(c)] + framer.receive_data(b"")
    out = []
    for seq, f in enumerate(frames, 1):
        msg = ann.feed(f, seq, 0, direction)
        out.append((f.raw, f.offset, f.terminated, f.lines, f.invalid_utf8, [x.to_json() for x in msg.findings]))
    return out


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    cuts = sorted({c % (len(data) + 1) for c in cuts})
    return [p for p in (data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)) if p]


@settings(max_examples=400, deadline=None)
@given(st.lists(lines, max_size=14), st.lists(st.integers(min_value=0), max_size=14), st.sampled_from(list(Direction)))
def test_any_chunking_gives_the_same_frames_and_findings(parts: list[bytes], cuts: list[int], direction: Direction) -> None:
    data = b"".join(parts)
    whole = judged([data], direction)
    assert judged(split(data, cuts), direction) == whole
    assert judged([data[i:i + 1] for i in range(len(data))], direction) == whole
    assert b"".join(r for r, *_ in whole) == data


def test_blank_lines_are_judged_one_by_one_however_they_are_read() -> None:
    data = b"\n\r\n \n"
    for chunks in ([data], [b"\n", b"\r\n", b" \n"], [data[i:i + 1] for i in range(len(data))]):
        codes = [[f["code"] for f in fs] for *_, fs in judged(chunks, Direction.S2C)]
        assert codes == [["framing.empty_line"], ["framing.crlf", "framing.empty_line"], ["framing.empty_line"]], chunks
