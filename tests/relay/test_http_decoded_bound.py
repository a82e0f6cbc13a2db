"""Compressed JSON bodies and the memory the tap gives them (sans-IO tap,
tests/sansio_tap.py; the bounds are lowered so the test stays small: the code
paths are those of the real 128 MiB / 64 MiB ones).

* A body that decodes to more than ``MAX_DECODED`` (a gzip bomb: 1 MiB of gzip
  is 1 GiB of JSON) was decoded whole in the recorder, without bound. Now
  decoding stops at the bound: ``http.content_too_large_to_decode`` (not a
  decoding failure: the body may be fine), the body kept as relayed in a
  ``response_body`` record, its request ``http.answer_undecoded``, not unanswered.
* A body whose *compressed* size passed ``RAW_KEEP`` (64 MiB) was reported as not
  decoding (``http.content_decoding_failed``, "larger than …") although it did:
  it is decoded as it arrives now, and framed.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from mcptap.capture.format import decode_bytes
from mcptap.check.report import check_capture
from mcptap.relay.http import observe_state
from sansio_tap import LIST, SansIoTap, chunk, finding_codes, gzip_answered, list_answer, post


def test_the_real_bound_is_that_of_an_sse_event() -> None:
    from mcptap.protocol import content_coding
    from mcptap.protocol.sse import MAX_BLOCK
    assert content_coding.MAX_DECODED == MAX_BLOCK == 128 << 20


def test_a_body_decoding_past_the_bound_is_kept_raw_and_flagged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(observe_state, "MAX_DECODED", 1 << 20, raising=False)
    body = gzip.compress(list_answer(b"a" * (3 << 20)))         # 3 MiB decoded from ~3 KiB
    recs = gzip_answered(tmp_path / "c.jsonl", body)
    codes = finding_codes(recs)
    assert "http.content_too_large_to_decode" in codes and "http.answer_undecoded" in codes, codes
    assert "http.content_decoding_failed" not in codes       # nothing says the body is broken
    kept = [r for r in recs if r.get("event") == "response_body"]
    assert len(kept) == 1 and decode_bytes(kept[0], "body") == body and "offset" not in kept[0]
    assert not [r for r in recs if r["type"] == "message" and r["dir"] == "s2c"]
    for reuse in (True, False):
        groups = set(check_capture(str(tmp_path / "c.jsonl"), reuse=reuse).groups)
        assert "http.content_too_large_to_decode" in groups and "jsonrpc.unanswered_request" not in groups, (reuse, sorted(groups))


def test_near_miss_a_body_within_the_bound_is_framed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(observe_state, "MAX_DECODED", 1 << 20, raising=False)
    answer = list_answer(b"a" * ((1 << 20) - 200))
    recs = gzip_answered(tmp_path / "c.jsonl", gzip.compress(answer))
    assert [r["json"]["id"] for r in recs if r["type"] == "message" and r["dir"] == "s2c"] == [1]
    assert not {"http.content_too_large_to_decode", "http.content_decoding_failed"} & finding_codes(recs)


def test_a_body_larger_compressed_than_the_raw_keep_still_decodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(observe_state, "RAW_KEEP", 4096)
    answer = list_answer(os.urandom(32 << 10).hex().encode())   # incompressible: ~32 KiB of gzip
    recs = gzip_answered(tmp_path / "c.jsonl", gzip.compress(answer))
    assert [len(r["json"]["result"]["x"]) for r in recs if r["type"] == "message" and r["dir"] == "s2c"] == [64 << 10]
    assert not [r for r in recs if r.get("event") == "response_body" or "undecoded" in r]
    assert not {"http.content_decoding_failed", "http.answer_undecoded"} & finding_codes(recs)


def test_an_event_stream_chunk_decoding_past_the_bound_stops_decoding_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An event stream has no length bound, but one of its chunks decoding to more
    than the bound at once (a bomb in an SSE stream) is not decoded into memory:
    the events before it are analysed, the bytes from that chunk on kept as relayed."""
    import zlib

    monkeypatch.setattr(observe_state, "MAX_DECODED", 1 << 20, raising=False)
    event = b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n\n'
    z = zlib.compressobj(wbits=31)
    first = z.compress(event) + z.flush(zlib.Z_SYNC_FLUSH)
    bomb = z.compress(b": " + b"a" * (3 << 20) + b"\n\n") + z.flush()
    tap = SansIoTap(tmp_path / "c.jsonl")
    tap.client(post(b"/mcp", LIST))
    tap.upstream(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n")
    for piece in (first, bomb):
        tap.upstream(chunk(piece))
    tap.upstream(b"0\r\n\r\n")
    recs = tap.records()
    assert [r["json"]["method"] for r in recs if r["type"] == "message" and r["dir"] == "s2c"] == ["notifications/message"]
    kept = [r for r in recs if r.get("event") == "response_body"]
    assert len(kept) == 1 and decode_bytes(kept[0], "body") == bomb and kept[0]["offset"] == len(first), kept
    assert {"http.content_too_large_to_decode", "http.answer_undecoded"} <= finding_codes(recs)


def _run_plain(tmp_path: Path, body: bytes) -> list[dict]:
    tap = SansIoTap(tmp_path / "c.jsonl")
    tap.client(post(b"/mcp", LIST))
    tap.upstream(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
    for i in range(0, len(body), 16384):
        tap.upstream(body[i:i + 16384])
    return tap.records()


@pytest.mark.parametrize("keep", [1 << 30, 4096])
def test_a_plain_body_past_the_bound_is_kept_raw_and_flagged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: int) -> None:
    """An uncompressed JSON body was held whole without bound (a 1 GiB answer held
    1 GiB in the recorder); past ``MAX_DECODED`` it is kept as relayed (up to
    ``RAW_KEEP``, the rest counted), flagged and its request not unanswered."""
    monkeypatch.setattr(observe_state, "MAX_DECODED", 1 << 20, raising=False)
    monkeypatch.setattr(observe_state, "RAW_KEEP", keep)
    body = list_answer(b"a" * (3 << 20))
    recs = _run_plain(tmp_path, body)
    codes = finding_codes(recs)
    assert "http.content_too_large_to_decode" in codes and "http.answer_undecoded" in codes, codes
    assert "http.content_decoding_failed" not in codes
    (kept,) = [r for r in recs if r.get("event") == "response_body"]
    assert decode_bytes(kept, "body") == body[:keep] and kept.get("dropped", 0) == max(len(body) - keep, 0) and "offset" not in kept
    assert not [r for r in recs if r["type"] == "message" and r["dir"] == "s2c"]
    end = next(r for r in recs if r.get("event") == "end" and r.get("exchange") == kept["exchange"])
    assert end["response_bytes"] == len(body)
    for reuse in (True, False):
        groups = set(check_capture(str(tmp_path / "c.jsonl"), reuse=reuse).groups)
        assert "http.content_too_large_to_decode" in groups and "jsonrpc.unanswered_request" not in groups, (reuse, sorted(groups))


def test_near_miss_a_plain_body_within_the_bound_is_framed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(observe_state, "MAX_DECODED", 1 << 20, raising=False)
    answer = list_answer(b"a" * ((1 << 20) - 200))
    recs = _run_plain(tmp_path, answer)
    assert [r["json"]["id"] for r in recs if r["type"] == "message" and r["dir"] == "s2c"] == [1]
    assert not {"http.content_too_large_to_decode", "http.content_decoding_failed"} & finding_codes(recs)
