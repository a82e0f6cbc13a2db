"""A compressed body that inflates far beyond its size (a decompression bomb)
is kept as it was on the wire, not decoded into the capture (the breaker's
case: a 97 KB gzip JSON answer became a 100 MB capture; nine 117 KB ones a
1.08 GB capture, the tap at 411 MB). Decoding stops once a body decodes to
more than ``BOMB_FLOOR`` bytes at more than ``BOMB_RATIO`` times the coded
bytes given so far: ``http.content_decompression_bomb``, the coded body in a
``response_body`` record, the request not judged unanswered. A body that
compresses as JSON does (5 to 20 times) is decoded whatever its size, and a
small one however well it compresses. Sans-IO tap (tests/sansio_tap.py)."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from mcptap.capture.format import decode_bytes
from mcptap.check.report import check_capture
from mcptap.protocol import content_coding
from mcptap.protocol.content_coding import BodyDecoder, DecodeError, decode_whole
from sansio_tap import finding_codes, gzip_answered, list_answer


def test_a_json_bomb_is_kept_as_relayed_not_decoded(tmp_path: Path) -> None:
    body = gzip.compress(list_answer(b" " * (40 << 20)), 9)          # 40 MiB from ~40 KiB
    recs = gzip_answered(tmp_path / "c.jsonl", body)
    codes = finding_codes(recs)
    assert {"http.content_decompression_bomb", "http.answer_undecoded"} <= codes, codes
    assert "jsonrpc.unanswered_request" not in codes and "http.content_too_large_to_decode" not in codes
    (raw,) = [r for r in recs if r.get("event") == "response_body"]
    assert decode_bytes(raw, "body") == body                      # what was on the wire, all of it
    assert not [r for r in recs if r["type"] == "message" and r["dir"] == "s2c"]
    assert os.path.getsize(tmp_path / "c.jsonl") < 4 * len(body)
    # check --full judges the capture as the tap did
    for reuse in (True, False):
        assert "http.content_decompression_bomb" in set(check_capture(str(tmp_path / "c.jsonl"), reuse=reuse).groups)


def test_an_event_stream_stops_decoding_at_the_bomb_and_keeps_the_events_before(tmp_path: Path) -> None:
    ev = b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}\n\n'
    z = gzip.compress(ev * 3 + b": " + b" " * (40 << 20) + b"\n\n" + ev, 9)
    recs = gzip_answered(tmp_path / "c.jsonl", z, b"text/event-stream")
    assert "http.content_decompression_bomb" in finding_codes(recs)
    assert len([r for r in recs if r["type"] == "message" and r["dir"] == "s2c"]) == 3
    assert os.path.getsize(tmp_path / "c.jsonl") < 4 * len(z)


def test_a_request_body_bomb_is_not_decoded() -> None:
    body, why = decode_whole("gzip", gzip.compress(b" " * (40 << 20), 9))
    assert body is None and why is not None
    assert content_coding.undecoded_code(why, "gzip", True)[0] == "http.content_decompression_bomb"


def test_large_bodies_at_json_ratios_and_small_bombs_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(content_coding, "BOMB_FLOOR", 1 << 20)
    varied = b"".join(b'{"id":%d,"name":"tool-%x","description":"does %s"},' % (i, i * 7919, os.urandom(6).hex().encode())
                      for i in range(40_000))                    # ~3 MiB, compresses 2-5 times
    data, why = decode_whole("gzip", gzip.compress(varied))
    assert why is None and data == varied
    small = b" " * (1 << 20)                                     # 1000 times, but not beyond the floor
    assert decode_whole("gzip", gzip.compress(small, 9)) == (small, None)
    d = BodyDecoder("gzip")
    with pytest.raises(DecodeError) as exc:
        d.decompress(gzip.compress(small * 2, 9))
    assert content_coding.BOMB in exc.value.why and d.out <= (1 << 20) + 1  # never more decoded than allowed, plus one byte
