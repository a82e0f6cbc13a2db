"""Lone UTF-16 surrogate escapes (``"\\ud83d"``): valid by the JSON grammar
(RFC 8259 §8.2), not Unicode text. A JavaScript server that cuts a string
inside an emoji sends one (``JSON.stringify("😀".slice(0, 1))`` is
``"\\ud83d"``); orjson, serde_json and the Python SDK's pydantic refuse the
whole message. The tap must read it as the JSON-RPC message it is (paired,
classified), show the surrogate as U+FFFD, keep the bytes exact and say why a
strict peer will choke: ``jsonrpc.lone_surrogate``; never "not JSON"."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.check.report import check_capture
from mcptap.model import UNPARSED, Direction
from mcptap.protocol.framing import NewlineFramer
from mcptap.protocol.jsonparse import LONE_SURROGATE, NON_FINITE, exact_json, parse_exact, parse_json_full
from mcptap.protocol.skeleton import parse_message
from mcptap.recorder import Recorder

CUT = b'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"cut \\ud83d"}]}}'
HANDSHAKE = [
    ("c2s", b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},'
            b'"clientInfo":{"name":"c","version":"1"}}}\n'),
    ("s2c", b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},'
            b'"serverInfo":{"name":"s","version":"1"}}}\n'),
    ("c2s", b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'),
]
CALL = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{}}}'


def test_parse_reads_lone_surrogates_as_replacement_characters() -> None:
    value, bad, odd = parse_json_full(CUT + b"\n")
    assert odd == LONE_SURROGATE and bad == ()
    assert value["result"]["content"][0]["text"] == "cut \ufffd"
    # each kind of lone surrogate, in keys and nested values; a valid pair stays one character
    value, _, odd = parse_json_full(b'{"\\udc00":["\\ud800x",{"k":"\\udfff\\ud800"}],"ok":"\\ud83d\\ude00"}')
    assert odd == LONE_SURROGATE
    assert value == {"\ufffd": ["\ufffdx", {"k": "\ufffd\ufffd"}], "ok": "\U0001F600"}
    # an escaped backslash before "ud800" is no escape: orjson reads it, nothing to flag
    assert parse_json_full(b'{"a":"\\\\ud800"}') == ({"a": "\\ud800"}, (), 0)
    # with a number beyond a double and invalid UTF-8 in the same payload, in either order
    value, bad, odd = parse_json_full(b'{"a":"\\ud800","x":1e400,"b":"\xff"}')
    assert odd == LONE_SURROGATE | NON_FINITE and bad == (29,) and value["b"] == "\ufffd"
    value, bad, odd = parse_json_full(b'{"b":"\xff","a":"\\ud800"}')
    assert odd == LONE_SURROGATE and bad == (6,) and value == {"b": "\ufffd", "a": "\ufffd"}
    # what is not JSON stays not JSON
    assert parse_json_full(b'{"a":"\\ud800"')[0] is UNPARSED
    assert parse_exact(b'{"a":"\\ud800",}') is None
    # readers of a capture's raw bytes see the same value
    assert exact_json(CUT) == parse_json_full(CUT)[0]


def test_large_payloads_take_the_same_way() -> None:
    """The skeleton parser (payloads above 4 MiB) hands a refused payload to
    parse_json_full whole: the same value and flag."""
    raw = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"' + b"a" * 200_000 + b'\\ud83d"}]}}'
    value, bad, odd = parse_message(raw, above=1000, long=1000)
    assert odd == LONE_SURROGATE and bad == ()
    assert value["result"]["content"][0]["text"] == "a" * 200_000 + "\ufffd"


@given(st.text(max_size=30), st.integers(min_value=0, max_value=30), st.sampled_from(["\\ud800", "\\udbff", "\\udc00", "\\udfff", "\\ud83d"]))
def test_any_string_with_a_lone_surrogate_is_json(text: str, at: int, esc: str) -> None:
    """Any string cut with a lone surrogate escape at any place (of a key or
    a value) parses; the surrogate reads as U+FFFD and the rest is the text."""
    at = min(at, len(text))
    lit = json.dumps(text[:at])[:-1] + esc + json.dumps(text[at:])[1:]
    want = text[:at] + "\ufffd" + text[at:]
    for doc, get in (('{"v":' + lit + "}", lambda v: v["v"]), ("{" + lit + ":1}", lambda v: next(iter(v))), ("[" + lit + "]", lambda v: v[0])):
        value, bad, odd = parse_json_full(doc.encode())
        assert odd == LONE_SURROGATE and bad == ()
        assert get(value) == want


def _record(path: Path, lines: list[tuple[str, bytes]]):
    ticks = itertools.count(1000, 1000)
    rec = Recorder(CaptureWriter.open(str(path)), "stdio", {"argv": ["node", "server.js"]}, clock=lambda: next(ticks),
                   started="2026-01-01T00:00:00.000000Z")
    for d, data in lines:
        rec.stdio_bytes(Direction(d), data)
    rec.close()
    return read_capture(str(path))


def _codes(rec: dict) -> list[str]:
    return [f["code"] for f in rec.get("findings", ())]


def test_a_response_cut_inside_an_emoji_pairs_and_is_flagged(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    cap = _record(path, [*HANDSHAKE, ("c2s", CALL + b"\n"), ("s2c", CUT + b"\n")])
    req, res = [r for r in cap.records if r["type"] == "message"][-2:]
    assert res["kind"] == "response" and res["pair"] == req["seq"] and res["id"] == 2
    assert _codes(res) == ["jsonrpc.lone_surrogate"]
    assert not cap.records[-1]["pending"]                       # the request was answered
    # the bytes the host got are the record's, exactly; the json shows U+FFFD
    assert res["raw"].encode() == CUT + b"\n" and res["json"]["result"]["content"][0]["text"] == "cut \ufffd"
    # check and a full re-annotation judge it the same way, and nothing else
    for reuse in (True, False):
        rep = check_capture(str(path), reuse=reuse)
        assert set(rep.groups) == {"jsonrpc.lone_surrogate"} and rep.groups["jsonrpc.lone_surrogate"].severity == "warn"


def test_lone_surrogate_ids_still_pair(tmp_path: Path) -> None:
    """A string id with a lone surrogate (a JavaScript client's cut id) pairs
    with its answer; the record's ``id`` holds U+FFFD (its exact value is in
    ``raw``: tests/protocol/test_lone_surrogate_ids.py)."""
    cap = _record(tmp_path / "id.jsonl", [("c2s", b'{"jsonrpc":"2.0","id":"r-\\udc00","method":"ping"}\n'),
                                          ("s2c", b'{"jsonrpc":"2.0","id":"r-\\udc00","result":{}}\n')])
    req, res = [r for r in cap.records if r["type"] == "message"]
    assert req["kind"] == "request" and res["pair"] == req["seq"] and res["id"] == "r-\ufffd"


def test_stdio_framing_reads_it_whole_in_any_chunking() -> None:
    data = CALL + b"\n" + CUT + b"\n"
    for size in (1, 3, 7, len(data)):
        framer = NewlineFramer()
        frames = [f for i in range(0, len(data), size) for f in framer.receive_data(data[i:i + size])]
        assert [f.oddities for f in frames] == [0, LONE_SURROGATE]
        assert frames[1].value["id"] == 2


def test_http_sse_event_with_a_lone_surrogate(tmp_path: Path) -> None:
    """The HTTP tap hands an SSE event's data to the recorder, which flags it."""
    path = tmp_path / "http.jsonl"
    ticks = itertools.count(1000, 1000)
    rec = Recorder(CaptureWriter.open(str(path)), "http", {"url": "http://127.0.0.1:9/mcp"}, clock=lambda: next(ticks),
                   started="2026-01-01T00:00:00.000000Z")
    t = {"exchange": 1, "conn": 1, "http": "post"}
    rec.frame(Direction.C2S, CALL, transport=t)
    rec.frame(Direction.S2C, CUT, transport=t)
    rec.close()
    req, res = [r for r in read_capture(str(path)).records if r["type"] == "message"]
    assert res["pair"] == req["seq"] and _codes(res) == ["jsonrpc.lone_surrogate"]
