"""``Annotator.feed_line`` (check --full's way to re-annotate a message
record's line) gives exactly what ``feed`` gives for the same line as a frame
of default facts: the same Message for every line, and the same state after
(what later messages and the end of the capture are judged by)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from casefiles import as_stdio, wires
from mcptap.model import Direction, Frame, Message
from mcptap.protocol.annotate import Annotator
from mcptap.protocol.framing import NewlineFramer
from mcptap.protocol.jsonparse import BOM

METHODS = ["initialize", "notifications/initialized", "tools/call", "tools/list", "ping", "notifications/progress",
           "notifications/cancelled", "sampling/createMessage", "notifications/tools/list_changed", "resources/subscribe", 7]
IDS = st.one_of(st.integers(0, 4), st.sampled_from(["1", "a", None, True, 1.0, 2.5, [1], 1 << 70, -(1 << 60)]))


def _same(feeds: list[tuple[Direction, bytes]], transport: str = "stdio", large: int = 1 << 20) -> int:
    """Feed each (direction, line) to two annotators, one by ``feed`` and one by
    ``feed_line`` where the frame has default facts; assert the same Messages
    and the same end. Returns how many went through ``feed_line``."""
    a = Annotator(transport, large_message=large, shapes=True)
    b = Annotator(transport, large_message=large, shapes=True)
    framers = {d: NewlineFramer() for d in Direction}
    seq, lined = 0, 0
    for d, data in feeds:
        for f in framers[d].receive_data(data):
            seq += 1
            want = a.feed(f, seq, seq * 10, d)
            if f.lines == 1 and f.terminated and not f.invalid_utf8 and not f.oddities:
                got = b.feed_line(f.value, f.raw, f.offset, seq, seq * 10, d)
                lined += 1
            else:
                got = b.feed(Frame(f.raw, f.offset, f.terminated, f.value, f.invalid_utf8, f.lines, f.oddities), seq, seq * 10, d)
            assert _fields(got) == _fields(want), (d, data)
    for d in Direction:
        assert a.eof(d, seq * 10 + 5) == b.eof(d, seq * 10 + 5)
    assert a.finish(seq * 10 + 9) == b.finish(seq * 10 + 9)
    assert [p.describe() for p in a.pending()] == [p.describe() for p in b.pending()]
    return lined


def _fields(m: Message) -> Any:
    return (m.seq, m.t_us, m.direction, m.raw, m.value, m.kind, m.session, m.id, m.has_id, m.method, m.pair, m.latency_us, m.phase,
            m.revision, m.findings, m.members, m.link, m.offset, m.terminated, m.transport)


def _stdio_wires() -> list[Any]:
    return wires("stdio") + [as_stdio(w) for w in wires("http")]


@pytest.mark.parametrize("wire", _stdio_wires(), ids=lambda w: f"{w.case}/{w.name}")
def test_every_case_gives_the_same_annotations(wire: Any) -> None:
    feeds = [(Direction(e.dir), e.data) for e in wire.events if e.kind == "bytes" and e.data and e.dir in ("c2s", "s2c")]
    _same(feeds)


def _line(v: Any, eol: bytes, bom: bool) -> bytes:
    try:
        raw = orjson.dumps(v)
    except orjson.JSONEncodeError:          # an integer beyond 64 bits
        raw = str(v).encode() if isinstance(v, int) else b"null"
    return (BOM if bom else b"") + raw + eol


@st.composite
def traffic(draw: Any) -> list[tuple[Direction, bytes]]:
    out = []
    for _ in range(draw(st.integers(0, 30))):
        d = draw(st.sampled_from(list(Direction)))
        shape = draw(st.sampled_from(["request", "notification", "result", "error", "batch", "odd"]))
        v: Any
        if shape in ("request", "notification"):
            v = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "1.0"])), "method": draw(st.sampled_from(METHODS))}
            if shape == "request":
                v["id"] = draw(IDS)
            params = draw(st.sampled_from([None, {}, {"_meta": {"progressToken": 1}}, {"requestId": 1}, {"progressToken": 1, "progress": 2},
                                           {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
                                           {"name": "t", "arguments": {}}, [1]]))
            if params is not None:
                v["params"] = params
        elif shape in ("result", "error"):
            v = {"jsonrpc": "2.0", "id": draw(IDS)}
            if shape == "result":
                v["result"] = draw(st.sampled_from([{}, {"content": []}, {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                                                          "serverInfo": {"name": "s", "version": "1"}}, 3]))
            else:
                v["error"] = draw(st.sampled_from([{"code": -32601, "message": "no"}, {"code": -32700, "message": "x"}, {"code": "x"}]))
        elif shape == "batch":
            v = draw(st.lists(st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "id": IDS, "method": st.sampled_from(METHODS)}), max_size=3))
        else:
            v = draw(st.sampled_from([3, "text", None, {"foo": 1}, {"id": 1}]))
        out.append((d, _line(v, draw(st.sampled_from([b"\n", b"\n", b"\r\n"])), draw(st.integers(0, 15)) == 0)))
    return out


@settings(max_examples=300, deadline=None)
@given(traffic(), st.sampled_from([1 << 20, 60]))
def test_arbitrary_traffic_gives_the_same_annotations(feeds: list[tuple[Direction, bytes]], large: int) -> None:
    _same(feeds, large=large)


def test_http_and_unusual_lines_take_feed() -> None:
    """Lines feed has more to say about (a float or big-integer id, a batch,
    CRLF, a BOM, a large line, not JSON-RPC) and an HTTP annotator's: the same."""
    lines = [b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n', b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}\n',
             b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}\n', b'[{"jsonrpc":"2.0","id":3,"method":"ping"}]\n',
             b'{"jsonrpc":"2.0","id":4,"method":"ping"}\r\n', BOM + b'{"jsonrpc":"2.0","id":5,"method":"ping"}\n', b'[]\n', b'7\n',
             b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"' + b"x" * 100 + b'"}}\n']
    assert _same([(Direction.C2S, line) for line in lines], large=80) == len(lines)
    assert _same([(Direction.C2S, line) for line in lines], transport="http") == len(lines)
