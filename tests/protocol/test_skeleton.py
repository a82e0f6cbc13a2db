"""protocol/skeleton.py: a skeleton parse answers exactly as the full parse.

With the thresholds lowered to a few bytes (so short strings become
LongString placeholders and long literals are checked in tiny pieces):

* for arbitrary bytes, ``parse_message`` returns what ``parse_json_full``
  returns (same refusals, same values, same offsets and overflow flag);
* for arbitrary sequences of MCP-shaped messages, the annotator gives the same
  annotations (kinds, pairing, findings, end findings, pending list) on
  skeletons as on fully parsed values.
"""

from __future__ import annotations

import copy
import pickle

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcptap.model import UNPARSED, Direction, Frame
from mcptap.protocol import skeleton
from mcptap.protocol.annotate import Annotator
from mcptap.protocol.jsonparse import LONE_SURROGATE, parse_json_full
from mcptap.protocol.skeleton import LongString, parse_message
from mcptap.records.message import MessageRecord

LONG = 12          # literal bytes above which a string value is a placeholder in these tests


@pytest.fixture(autouse=True)
def tiny_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(skeleton, "PIECE", 5)
    monkeypatch.setattr(skeleton, "MAX_REST_SHARE", 0)


def small(raw: bytes) -> tuple:
    return parse_message(raw, above=0, long=LONG)


def same_parse(a: tuple, b: tuple) -> None:
    assert a[1:] == b[1:]
    if b[0] is UNPARSED:
        assert a[0] is UNPARSED
        return
    assert a[0] == b[0]
    assert shape(a[0]) == shape(b[0])


def shape(v: object) -> object:
    """The value's JSON types (a LongString counts as a string)."""
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items()}
    if isinstance(v, list):
        return [shape(x) for x in v]
    return "str" if isinstance(v, str) else type(v).__name__


# -- strategies ------------------------------------------------------------------------------
WORDS = ["tools/call", "tools/list", "initialize", "notifications/initialized", "notifications/message",
         "notifications/progress", "resources/read", "resources/subscribe", "prompts/get", "ping", "2.0",
         "2025-06-18", "2025-11-25", "text", "image", "resource", "audio", "resource_link", "info", "error",
         "session not found", "Session terminated", "echo", "file:///a.txt", "image/png", "application/json",
         "\u00e9t\u00e9 \U0001f600 \\ \" \n \u2028 \x00 \x7f", "a" * 40]
strings = st.one_of(st.sampled_from(WORDS), st.text(max_size=30),
                    st.builds(lambda w, n: w + "x" * n, st.sampled_from(WORDS), st.integers(0, 20)))
KEYS = ["jsonrpc", "id", "method", "params", "result", "error", "code", "message", "data", "_meta", "content",
        "type", "text", "blob", "uri", "mimeType", "name", "arguments", "tools", "level", "progressToken",
        "progress", "total", "capabilities", "protocolVersion", "nextCursor", "cursor", "isError", "contents",
        "structuredContent", "resource", "requestId", "reason", "logger"]
values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False) | strings,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(KEYS) | strings, c, max_size=5),
    max_leaves=16,
)
ids = st.integers(0, 5) | st.sampled_from(["a", "id-long-long-long", "x" * 30]) | values   # values: ids a peer should not send


@st.composite
def message(draw: st.DrawFn) -> dict:
    kind = draw(st.sampled_from(["request", "notification", "result", "error", "other"]))
    m: dict = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "1.0-long-version-string"]))}
    if kind in ("request", "notification"):
        m["method"] = draw(st.sampled_from(WORDS[:10]) | strings)
        if kind == "request":
            m["id"] = draw(ids)
        if draw(st.booleans()):
            m["params"] = draw(st.dictionaries(st.sampled_from(KEYS), values, max_size=5))
    elif kind == "result":
        m["id"] = draw(ids)
        m["result"] = draw(st.dictionaries(st.sampled_from(KEYS), values, max_size=5) | st.fixed_dictionaries(
            {"content": st.lists(st.fixed_dictionaries({"type": st.sampled_from(["text", "image", "resource"]),
                                                         "text": strings}), max_size=3)}))
    elif kind == "error":
        m["id"] = draw(ids | st.none())
        m["error"] = {"code": draw(st.sampled_from([-32600, -32601, -32602, -32603, -32000, -32002, 5])),
                      "message": draw(strings)}
        if draw(st.booleans()):
            m["error"]["data"] = draw(values)
    else:
        m.update(draw(st.dictionaries(st.sampled_from(KEYS), values, max_size=5)))
    return m


def encode(v: object, ascii_only: bool) -> bytes:
    import json
    return json.dumps(v, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass") if ascii_only else orjson.dumps(v)


documents = st.builds(encode, message() | values, st.booleans())


# -- parsing: the same answer as parse_json_full ------------------------------------------------
@settings(max_examples=400, deadline=None)
@given(documents)
def test_valid_documents_parse_the_same(raw: bytes) -> None:
    same_parse(small(raw), parse_json_full(raw))


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    raw = bytearray(draw(documents))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(raw)))
        raw[at:at] = draw(st.sampled_from([b"\x01", b"\\", b"\\x", b"\\ud800", b"\\udc00", b"\\ud83d\\ude00", b'"',
                                           b"\xff", b"\xc3", b"\xed\xa0\x80", b"1e400", b"}", b"\n", b"\x7f",
                                           b"\\u12", b"\xef\xbb\xbf"]))
    if draw(st.booleans()):
        del raw[draw(st.integers(0, len(raw))):]
    return bytes(raw)


@settings(max_examples=600, deadline=None)
@given(damaged() | st.binary(max_size=80))
def test_any_bytes_parse_the_same_and_never_raise(raw: bytes) -> None:
    same_parse(small(raw), parse_json_full(raw))


def test_lone_surrogates_and_controls_are_refused_as_orjson_does() -> None:
    """orjson refuses each: the skeleton hands the payload to parse_json_full,
    which reads a lone surrogate as U+FFFD (flagged) and the rest as not JSON."""
    for body in (b"\\ud800", b"\\udc00x"):
        raw = b'{"text":"' + b"y" * 40 + body + b"y" * 40 + b'"}'
        assert small(raw) == parse_json_full(raw) and small(raw)[2] == LONE_SURROGATE
    for body in (b"\x1f", b"\\q", b"\\u12g4"):
        raw = b'{"text":"' + b"y" * 40 + body + b"y" * 40 + b'"}'
        assert small(raw) == (UNPARSED, (), False)
    raw = b'{"result":{"text":"' + b"y" * 40 + b"\\ud83d\\ude00" + b"y" * 40 + b'"}}'
    v = small(raw)[0]["result"]
    assert type(v["text"]) is LongString and v["text"] == "y" * 40 + "\U0001f600" + "y" * 40


def test_long_payload_strings_are_placeholders_keys_and_others_are_not() -> None:
    raw = b'{"result": {"' + b"k" * 30 + b'": {"data": "' + b"v" * 30 + b'"}, "short": "abc", "uri": "' + b"u" * 30 + b'", "blob": ["'
    raw += b"b" * 30 + b'"], "id": ["' + b"i" * 30 + b'"]}, "id": {"text": "' + b"t" * 30 + b'"}, "data": ["' + b"d" * 30 + b'"]}'
    top = small(raw)[0]
    # outside params/result/error nothing is a placeholder: an object id is stored as the peer sent it
    assert type(top["id"]["text"]) is str and type(top["data"][0]) is str
    assert orjson.dumps(top["id"]) == b'{"text":"' + b"t" * 30 + b'"}'
    v = top["result"]
    key = next(iter(v))
    assert type(key) is str and key == "k" * 30
    assert type(v["uri"]) is str and v["uri"] == "u" * 30 and type(v["id"][0]) is str
    assert type(v["blob"][0]) is LongString and v["blob"][0] == "b" * 30
    s = v[key]["data"]
    assert type(s) is LongString and s.literal_bytes == 32
    assert str.__str__(s).startswith("\x00mcptap-long-string:")       # its own characters: the marker
    assert s == "v" * 30 and "v" * 30 == s and s != "v" and hash(s) == hash("v" * 30) and len(s) == 30
    assert s[:3] == "vvv" and s.startswith("vv") and "vv" in s and f"{s}" == "v" * 30 and str(s) == "v" * 30
    assert {s: 1}["v" * 30] == 1 and s in {"v" * 30} and s.upper() == "V" * 30 and s + "!" == "v" * 30 + "!"
    assert "!" + s == "!" + "v" * 30 and repr(s) == repr("v" * 30) and list(s)[:2] == ["v", "v"]
    assert copy.deepcopy(s) == "v" * 30 and type(copy.deepcopy(s)) is str and type(pickle.loads(pickle.dumps(s))) is str
    for lit, text in ((b'"' + b"a" * 20 + b'\\n"', "a" * 20 + "\n"), (b'"' + "\u00e9".encode() * 20 + b'"', "\u00e9" * 20)):
        ls = small(b'{"params":{"text":' + lit + b'}}')[0]["params"]["text"]
        assert type(ls) is LongString and len(ls) == len(text) and bool(ls) and ls == text
    assert v["short"] == "abc" and type(v["short"]) is str
    assert type(small(b'"' + b"t" * 40 + b'"')[0]) is LongString       # a whole message that is one long string


def test_small_payloads_and_fallbacks_are_the_full_parse() -> None:
    raw = b'{"a":"' + b"y" * 100 + b'"}'
    assert type(parse_message(raw)[0]["a"]) is str            # below SKELETON_ABOVE
    bad = b'{"a":"' + b"y" * 100 + b'\xff"}'                    # invalid UTF-8: parse_json_full's replacement
    assert small(bad) == parse_json_full(bad) and small(bad)[1]
    over = b'{"a":"' + b"y" * 100 + b'","b":1e400}'            # a number beyond a double: parse_exact
    assert small(over)[2] and type(small(over)[0]["a"]) is str


# -- annotations: the same on skeletons as on full values --------------------------------------------
def annotate(msgs: list[tuple[Direction, bytes]], parse) -> tuple[list[dict], list, list]:
    a = Annotator("http")
    out = []
    for seq, (d, raw) in enumerate(msgs, 1):
        value, bad, overflow = parse(raw)
        msg = a.feed(Frame(raw, 0, True, value, bad, 1, overflow), seq, seq * 10, d, "s-1", {"exchange": seq})
        rec = MessageRecord(msg, b"").to_json()
        rec.pop("json", None)
        rec.pop("raw", None)
        rec.pop("raw_b64", None)
        out.append(orjson.loads(orjson.dumps(rec, default=str)))
    fs = [f.to_json() for f in a.finish(10**6)]
    pending = [p.describe() for p in a.pairing.pending()]
    return out, orjson.loads(orjson.dumps(fs, default=str)), orjson.loads(orjson.dumps(pending, default=str))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from([Direction.C2S, Direction.S2C]), st.builds(orjson.dumps, message())), max_size=12))
def test_annotations_on_skeletons_equal_full_parses(msgs: list[tuple[Direction, bytes]]) -> None:
    assert annotate(msgs, small) == annotate(msgs, parse_json_full)


def test_schema_patterns_judge_the_real_text_of_placeholders() -> None:
    """JSON Schema ``pattern`` runs ``re`` in C, which reads a LongString's own
    characters (its marker): the contracts validate the real text, so a live
    skeleton parse and `check --full` give the same tool.structured_content_invalid
    and tool.arguments_invalid findings."""
    schema = {"type": "object", "properties": {"data": {"type": "string", "pattern": "^y+$"}}}
    msgs = [
        (Direction.C2S, orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
        (Direction.S2C, orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "t", "inputSchema": schema, "outputSchema": schema}]}})),
        (Direction.C2S, orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                      "params": {"name": "t", "arguments": {"data": "y" * 40 + "z"}}})),
        (Direction.S2C, orjson.dumps({"jsonrpc": "2.0", "id": 2, "result": {
            "content": [], "structuredContent": {"data": "y" * 40 + "z"}}})),
        (Direction.C2S, orjson.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                      "params": {"name": "t", "arguments": {"data": "y" * 41}}})),
        (Direction.S2C, orjson.dumps({"jsonrpc": "2.0", "id": 3, "result": {
            "content": [], "structuredContent": {"data": "y" * 41}}})),
    ]
    sk, full = annotate(msgs, small), annotate(msgs, parse_json_full)
    assert type(small(msgs[3][1])[0]["result"]["structuredContent"]["data"]) is LongString
    assert sk == full
    codes = [sorted(f["code"] for f in r.get("findings", ())) for r in full[0]]
    assert "tool.arguments_invalid" in codes[2] and "tool.structured_content_invalid" in codes[3]
    assert "tool.arguments_invalid" not in codes[4] and "tool.structured_content_invalid" not in codes[5]
