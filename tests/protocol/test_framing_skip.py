"""``NewlineFramer.skip_data`` (check's second process counting the lines it
skips, check/split_skip.py) against the real framer: on arbitrary bytes cut
anywhere, whenever it answers, its count is the number of frames
``receive_data`` returns for the same bytes and the framer is left exactly as
``receive_data`` leaves it; and a line's skeleton has the line's bracket depth
(the only thing of a line's bytes, besides its parse, that decides whether it
is held), so no line is parsed to be counted."""

from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.protocol.framing import NewlineFramer, _depth_delta, _skeletons

#: bytes that matter to framing, often; any byte, sometimes
PIECE = st.one_of(
    st.sampled_from([b"{", b"}", b"[", b"]", b'"', b"\\", b"\n", b"\r\n", b"a", b" ", b"\xef\xbb\xbf", b"\\\"", b"\\\\",
                     b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"x"}}\n',
                     b'{"jsonrpc":"2.0","id":1,"result":{"a":["}",{"b":"\\"]"}]}}\n',
                     b'{\n  "jsonrpc": "2.0",\n  "id": 2,\n  "result": {}\n}\n', b"[1,\n2]\n", b"banner\n"]),
    st.binary(max_size=8),
)
STREAM = st.lists(PIECE, max_size=60).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(line=STREAM)
def test_a_skeleton_has_the_bracket_depth_of_its_line(line: bytes) -> None:
    for one in line.split(b"\n"):
        skels = _skeletons(one)
        if skels is None:               # a backslash: not read by skeleton
            assert b"\\" in one
            continue
        (skel,) = skels
        assert _depth_delta(skel) == _depth_delta(one)


@settings(max_examples=400, deadline=None)
@given(stream=STREAM, cuts=st.lists(st.integers(0, 200), max_size=12), skipping=st.lists(st.booleans(), min_size=1, max_size=12))
def test_skip_data_counts_the_frames_receive_data_returns(stream: bytes, cuts: list[int], skipping: list[bool]) -> None:
    """Any chunking, skip_data and receive_data mixed in any order, then EOF:
    the same frame count at each chunk and the same framer state after it."""
    chunks, at = [], 0
    for n in cuts:
        chunks.append(stream[at:at + n])
        at += n
    chunks.append(stream[at:])
    real, skipper = NewlineFramer(5), NewlineFramer(5)
    for i, chunk in enumerate(chunks):
        want = len(real.receive_data(chunk))
        n = skipper.skip_data(chunk) if chunk and skipping[i % len(skipping)] else None
        if n is None:
            n = len(skipper.receive_data(chunk))
        assert n == want
        assert pickle.dumps(skipper) == pickle.dumps(real)
    assert [f.raw for f in skipper.receive_data(b"")] == [f.raw for f in real.receive_data(b"")]


def test_a_flood_is_counted_without_a_frame_built() -> None:
    line = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"line %d [x]"}}\n'
    data = b"".join(line % i for i in range(1000))
    framer = NewlineFramer()
    assert framer.skip_data(data[:-7]) == 999
    assert framer.skip_data(data[-7:]) == 1
    assert framer.buffered == 0 and framer._base == len(data)
    held = NewlineFramer()
    assert held.skip_data(b'{"jsonrpc":\n"2.0"}\n') is None          # a line whose depth rises: framed as always
    assert held.skip_data(b'{"a":"\\"}"}\n') is None                # an escape: framed as always
    assert held._base == 0 and held.buffered == 0
