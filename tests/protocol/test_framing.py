"""NewlineFramer: whole, one byte at a time, any chunking, arbitrary bytes."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.model import UNPARSED, Frame
from mcptap.protocol.framing import NewlineFramer
from mcptap.protocol.jsonparse import parse_json


def frames_of(chunks: list[bytes]) -> list[tuple[bytes, int, bool, int]]:
    """Frames as (raw, offset, terminated, lines), exactly as the framer gives
    them (tests/protocol/test_framing_chunking.py: findings too)."""
    f = NewlineFramer()
    out = []
    for c in chunks:
        out += f.receive_data(c)
    out += f.receive_data(b"")
    return [(x.raw, x.offset, x.terminated, x.lines) for x in out]


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    cuts = sorted({c % (len(data) + 1) for c in cuts})
    pieces, prev = [], 0
    for c in cuts + [len(data)]:
        pieces.append(data[prev:c])
        prev = c
    return [p for p in pieces if p]


lines = st.one_of(
    st.just(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'),
    st.just(b'{"jsonrpc":"2.0","id":1,"result":{}}\r\n'),
    st.just(b"banner text\n"),
    st.just(b'{\n  "jsonrpc": "2.0",\n  "id": 2,\n  "result": {}\n}\n'),
    st.just(b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n"),
    st.just(b'{"a":"\xe9\x93"}\n'),
    st.just(b"[1,2]\n"),
    st.just(b"{ broken\n"),
    st.just(b"\n"),
    st.binary(max_size=40),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(lines, max_size=12), st.lists(st.integers(min_value=0), max_size=12))
def test_any_chunking_gives_the_same_frames(parts: list[bytes], cuts: list[int]) -> None:
    data = b"".join(parts)
    whole = frames_of([data])
    assert frames_of(split(data, cuts)) == whole
    assert frames_of([data[i:i + 1] for i in range(len(data))]) == whole
    assert b"".join(r for r, *_ in whole) == data
    offs = [o for _, o, *_ in whole]
    assert offs == sorted(offs)


values = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False, allow_infinity=False)
                      | st.text(max_size=8), lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3),
                      max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(lines, values), max_size=12))
def test_a_whole_line_is_the_frame_receive_data_gives(parts: list[Any]) -> None:
    """``whole_line(dumps(v) + b"\\n", v)`` (re-framing a capture's message
    records) gives the frame ``receive_data`` gives for those bytes, offsets
    included; with bytes held it does nothing."""
    fast, slow = NewlineFramer(7), NewlineFramer(7)
    got: list[Frame] = []
    want: list[Frame] = []
    for p in parts:
        if isinstance(p, bytes):
            if not p:
                continue                        # (b"" is EOF)
            got += fast.receive_data(p)
            want += slow.receive_data(p)
            continue
        raw = orjson.dumps(p) + b"\n"
        held = fast.buffered
        f = fast.whole_line(raw, p)
        got += [f] if f is not None else fast.receive_data(raw)
        want += slow.receive_data(raw)
        assert (f is None) == (held > 0)
    got += fast.receive_data(b"")
    want += slow.receive_data(b"")
    assert got == want


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise_and_are_all_framed(data: bytes) -> None:
    frames = frames_of([data])
    assert b"".join(r for r, *_ in frames) == data


def test_pretty_printed_json_is_recovered_as_one_frame() -> None:
    data = b'{\n  "jsonrpc": "2.0",\n  "id": 2,\n  "result": {"x": [1,\n 2]}\n}\n{"jsonrpc":"2.0","id":3,"result":{}}\n'
    f = NewlineFramer()
    out = f.receive_data(data) + f.receive_data(b"")
    assert [x.lines for x in out] == [6, 1]
    assert out[0].value == {"jsonrpc": "2.0", "id": 2, "result": {"x": [1, 2]}}


def test_garbage_brace_line_does_not_swallow_the_next_message() -> None:
    f = NewlineFramer()
    out = f.receive_data(b'{ not json\n{"jsonrpc":"2.0","id":1,"result":{}}\n')
    assert [x.value is UNPARSED for x in out] == [True, False]


def test_a_16_mib_line_in_64_kib_chunks_is_one_frame_scanned_once() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"result":{"t":"' + b"x" * (16 << 20) + b'"}}\n'
    f = NewlineFramer()
    out = []
    for i in range(0, len(body), 65536):
        out += f.receive_data(body[i:i + 65536])
    assert len(out) == 1 and out[0].raw == body and out[0].value["id"] == 1
    assert f.buffered == 0


def test_final_line_without_newline_is_flushed_at_eof() -> None:
    f = NewlineFramer()
    assert f.receive_data(b'{"jsonrpc":"2.0","method":"x"}') == []
    (last,) = f.receive_data(b"")
    assert not last.terminated and last.value["method"] == "x"


def test_parse_json_reads_ids_through_invalid_utf8_and_bom() -> None:
    v, bad = parse_json(b'{"id":4,"x":"caf\xe9"}\n')
    assert v["id"] == 4 and bad == (16,)
    v, bad = parse_json(b'\xef\xbb\xbf{"id":5}\n')
    assert v == {"id": 5} and bad == ()


def test_a_chatty_server_gives_one_frame_per_line_whatever_the_reads() -> None:
    data = b"log line\n" * 1000 + b'{"jsonrpc":"2.0","id":1,"result":{}}\n' + b"more\n" * 3
    f = NewlineFramer()
    out = f.receive_data(data)
    assert [x.lines for x in out] == [1] * 1004
    assert out[0].value is UNPARSED and out[1000].value["id"] == 1
    assert frames_of([data]) == frames_of([data[:4500], data[4500:]])


def test_random_binary_is_framed_in_linear_time() -> None:
    import random
    import time

    data = random.Random(7).randbytes(1 << 20)
    f = NewlineFramer()
    t = time.process_time()
    out = []
    for i in range(0, len(data), 65536):
        out += f.receive_data(data[i:i + 65536])
    out += f.receive_data(b"")
    assert b"".join(x.raw for x in out) == data
    # not a timing assertion on speed, a guard against quadratic rescans (was 5 s)
    assert time.process_time() - t < 3.0


def test_a_second_framer_of_the_same_bytes_takes_the_first_ones_parses(monkeypatch: Any) -> None:
    """replay's stdio link frames a server's output to hand answers on, and its
    Recorder frames the same bytes to record them: the Recorder's framer takes
    the link's parse of each line (``parses`` -> ``receive_parsed``) and cuts the
    same frames as one that parses for itself; a line that does not match
    (another framer's state) is parsed as usual."""
    import mcptap.protocol.framing as framing

    stream = (b'{"jsonrpc":"2.0","id":1,"result":{}}\nlog line\n{\n "jsonrpc": "2.0",\n "id": 2, "result": {}\n}\n'
              b'{"jsonrpc":"2.0","id":18446744073709551617,"result":{"n":1e400}}\n\xff\xfe{"a":1}\n[1,2]\n{"jsonrpc":"2.0","method":"x"}')
    chunks = [stream[i:i + 7] for i in range(0, len(stream), 7)] + [b""]
    first, parses = NewlineFramer(), []
    for c in chunks:
        first.parses = []
        first.receive_data(c)
        parses.append(first.parses)
    ref = NewlineFramer()
    expected = [f for c in chunks for f in ref.receive_data(c)]
    calls: list[bytes] = []
    real = framing.parse_json_full
    monkeypatch.setattr(framing, "parse_json_full", lambda raw: calls.append(raw) or real(raw))
    second = NewlineFramer()
    got = [f for c, p in zip(chunks, parses, strict=True) for f in second.receive_parsed(c, p)]
    assert [(f.raw, f.offset, f.value, f.invalid_utf8, f.lines, f.oddities) for f in got] == \
        [(f.raw, f.offset, f.value, f.invalid_utf8, f.lines, f.oddities) for f in expected]
    assert calls == []
    third = NewlineFramer()
    assert [f.value for f in third.receive_parsed(b'{"id":3}\n', [(b'{"id":4}\n', ({"id": 4}, (), 0))])] == [{"id": 3}]
