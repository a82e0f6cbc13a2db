"""Numbers orjson cannot read faithfully (issue 9 item 8; reproducer
../shared/repro/big-integer-ids.sh): integers beyond 64 bits stay exact
integers, ``1e400`` is a finding and never "not JSON"."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.model import UNPARSED, Direction
from mcptap.protocol.framing import NewlineFramer
from mcptap.protocol.jsonparse import parse_exact, parse_json_full
from mcptap.recorder import Recorder

BIG = 18446744073709551617          # 2^64 + 1: orjson reads it as a float


def test_parse_keeps_integers_exact_and_flags_overflow() -> None:
    assert parse_exact(b'{"id":18446744073709551617}') == ({"id": BIG}, False)
    value, bad, overflow = parse_json_full(b'{"x":1e400}\n')
    assert overflow and value["x"] == float("inf") and bad == ()
    assert parse_json_full(b'{"x":NaN}\n')[0] is UNPARSED and parse_exact(b'{"x":NaN}') is None   # NaN is not JSON
    assert parse_exact(b"not json") is None


@given(st.integers(min_value=-(10 ** 40), max_value=10 ** 40))
def test_any_integer_id_pairs_exactly(i: int) -> None:
    framer = NewlineFramer()
    frames = framer.receive_data(json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}).encode() + b"\n")
    exact = parse_exact(frames[0].raw)
    assert exact is not None and exact[0]["id"] == i and type(exact[0]["id"]) is int


def _record(tmp_path, lines: list[tuple[str, bytes]]):
    now = {"t": 0}
    path = tmp_path / "ids.jsonl"
    rec = Recorder(CaptureWriter.open(str(path)), "stdio", {"argv": ["cat"]}, clock=lambda: now["t"], started="2026-01-01T00:00:00.000000Z")
    for d, data in lines:
        now["t"] += 1000
        rec.stdio_bytes(Direction(d), data)
    rec.close()
    return read_capture(str(path))


def test_ids_beyond_64_bits_are_distinct_and_pair(tmp_path) -> None:
    """The reproducer's traffic: two ids 1 apart beyond 2^64 are neither invalid
    nor duplicates, and each response pairs with its own request."""
    a, b = BIG, BIG + 1
    cap = _record(tmp_path, [
        ("c2s", b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % a),
        ("c2s", b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % b),
        ("s2c", b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % b),
        ("s2c", b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % a),
    ])
    msgs = [r for r in cap.records if r["type"] == "message"]
    codes = {f["code"] for r in msgs for f in r.get("findings", ())}
    assert "jsonrpc.invalid_id" not in codes and "jsonrpc.duplicate_id_in_flight" not in codes
    assert "jsonrpc.id_unsafe_integer" in codes
    assert msgs[2]["pair"] == msgs[1]["seq"] and msgs[3]["pair"] == msgs[0]["seq"]
    # the capture line holds the id digits exactly
    assert str(BIG) in (tmp_path / "ids.jsonl").read_text()
    assert not [r for r in cap.records if r["type"] == "gap"]


def test_non_finite_number_is_a_finding_not_garbage(tmp_path) -> None:
    cap = _record(tmp_path, [("c2s", b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1e400}}\n')])
    m = next(r for r in cap.records if r["type"] == "message")
    assert m["kind"] == "request"
    assert "jsonrpc.non_finite_number" in [f["code"] for f in m["findings"]]
    assert "framing.non_jsonrpc_line" not in [f["code"] for f in m["findings"]]


def test_response_without_result_or_error_is_paired_and_flagged(tmp_path) -> None:
    """Issue 16 item 6: neither result nor error is jsonrpc.result_and_error
    (as docs/findings.md says), and it still answers its request."""
    cap = _record(tmp_path, [("c2s", b'{"jsonrpc":"2.0","id":7,"method":"ping"}\n'), ("s2c", b'{"jsonrpc":"2.0","id":7}\n')])
    msgs = [r for r in cap.records if r["type"] == "message"]
    assert [f["code"] for f in msgs[1]["findings"]] == ["jsonrpc.result_and_error"]
    assert msgs[1]["pair"] == msgs[0]["seq"]
    end = cap.records[-1]
    assert not end["pending"]
