"""A fact that ends an HTTP exchange lost in a hole in the recording (its
``ResponseEnded``, or the ``ConnClosed`` that ends an exchange answered before
its request body ended: a LOST frame names no exchange for a connection's
close) left the exchange without an ``end`` record, so the HAR export had no
``_mcp.how`` for it. The end of the capture closes such exchanges out
(``GapObserver.close_out``), through the recorder process's real loop
(``record_stream``: START, BATCH, LOST and END frames)."""

from __future__ import annotations

import marshal
import os
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.cli.main import mcptap
from mcptap.recorder import Recorder
from mcptap.relay.http import events as r
from mcptap.relay.http.observe import HttpObserver
from mcptap.relay.http.proxy import HttpRelay
from mcptap.transport import fact_codec as fc
from mcptap.transport.http_recorder_child import Hooks, record_stream
from mcptap.transport.spill import SpillFile
from tests.relay.test_http_observe_gap import BODY, CALL, SSE_HEAD, _checked, _chunk
from tests.sansio_tap import UP, post


def _record(tmp_path: Path, batches: list[tuple[list[Any], bool]]) -> Path:
    """Run the recorder process's loop over ``batches`` (items, lost?): a lost
    batch is a LOST frame with what ``fc.dropped_facts`` reads of it, as the relay writes."""
    frames = [fc.frame(fc.START, 1, marshal.dumps("127.0.0.1:7000"))]
    for t, (items, gone) in enumerate(batches, 2):
        enc = fc.encode(items)
        assert enc is not None
        if gone:
            c2s, s2c, cut = fc.dropped_facts(bytes(enc[0]))
            frames.append(fc.frame(fc.LOST, t, fc.lost_meta(1, 999, c2s, s2c, 1, cut)))
        else:
            frames.append(fc.frame(fc.BATCH, t, enc[0], enc[1]))
    frames.append(fc.frame(fc.END, 99, marshal.dumps((0, {}))))
    fact_r, fact_w = os.pipe()
    status_r, status_w = os.pipe()
    os.write(fact_w, b"".join(bytes(b) for f in frames for b in f))
    os.close(fact_w)
    path = tmp_path / "c.jsonl"
    rec = Recorder(CaptureWriter.open(str(path)), "http", {"url": "sansio"}, clock=lambda: 0, started="2026-01-01T00:00:00.000000Z")
    hooks = Hooks(rec, lambda authority: HttpObserver(rec, UP, authority), lambda: None,
                  lambda code, extra: rec.close(exit_code=code, **extra))
    record_stream(fact_r, status_w, SpillFile(None, str(tmp_path)), hooks)
    for fd in (fact_r, status_r, status_w):
        os.close(fd)
    return path


def _ends(path: Path) -> dict[int, dict[str, Any]]:
    return {x["exchange"]: x for x in read_capture(str(path)).records if x.get("event") == "end"}


def _har_hows(tmp_path: Path, path: Path) -> list[Any]:
    har = tmp_path / "c.har"
    out = CliRunner().invoke(mcptap, ["export", str(path), "-f", "har", "-o", str(har)])
    assert out.exit_code == 0, out.output
    return [e["_mcp"].get("how") for e in orjson.loads(har.read_bytes())["log"]["entries"]]


def _opened(relay: HttpRelay, data: bytes) -> tuple[int, int, list[Any]]:
    cid, items = relay.client_opened()
    items += relay.client_data(cid, data)
    return cid, next(i.gen for i in items if isinstance(i, r.OpenUpstream)), items


def test_an_exchange_whose_response_end_was_in_the_hole_is_closed_out_at_the_end(tmp_path: Path) -> None:
    relay = HttpRelay(UP, listen_authority="127.0.0.1:7000")
    cid, gen, first = _opened(relay, post(b"/mcp", CALL))
    first += relay.upstream_data(cid, gen, SSE_HEAD + _chunk(BODY[:150]))
    hole = relay.upstream_data(cid, gen, _chunk(BODY[150:]) + b"0\r\n\r\n")    # the rest and the exchange's end
    assert any(isinstance(i, r.ResponseEnded) for i in hole)
    path = _record(tmp_path, [(first, False), (hole, True), (relay.shutdown(), False)])
    end = _ends(path)[1]
    assert end["how"] == "gap" and end["gap"] is True
    assert _har_hows(tmp_path, path) == ["gap"]
    assert _checked(path) == {"capture.gap", "capture.answers_in_gap"}      # its answer may be in the hole (info)


def test_an_exchange_whose_connection_close_was_in_the_hole_is_closed_out_at_the_end(tmp_path: Path) -> None:
    # answered (401) before its request body ended: it ends with its connection, whose close was lost
    relay = HttpRelay(UP, listen_authority="127.0.0.1:7000")
    cid, gen, first = _opened(relay, b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                     b"Content-Length: 100\r\n\r\n{\"jsonrpc\"")
    first += relay.upstream_data(cid, gen, b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\nContent-Length: 0\r\n\r\n")
    hole = relay.client_data(cid, b"")
    assert any(isinstance(i, r.ConnClosed) for i in hole) and not any(isinstance(i, r.ResponseEnded) for i in hole)
    cid2, gen2, after = _opened(relay, post(b"/mcp", b'{"jsonrpc":"2.0","id":2,"method":"ping"}'))
    after += relay.upstream_data(cid2, gen2, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 36\r\n\r\n"
                                             b'{"jsonrpc":"2.0","id":2,"result":{}}')
    path = _record(tmp_path, [(first, False), (hole, True), (after + relay.shutdown(), False)])
    ends = _ends(path)
    assert ends[1]["how"] == "complete" and ends[1]["gap"] is True and "request_cut" not in ends[1]
    assert ends[2]["how"] == "complete" and "gap" not in ends[2]
    assert _har_hows(tmp_path, path) == ["complete", "complete"]
    assert _checked(path) == {"capture.gap"}
