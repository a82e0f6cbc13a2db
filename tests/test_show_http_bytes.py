"""``show`` of an HTTP capture gives one byte figure whichever path re-annotates
it: the bytes of the messages (JSON bodies, SSE event data), labelled so. The
live tap's end record counts every byte it forwarded (heads, bodies, SSE
framing), which only the live tap can count; before, ``show`` printed that
figure for a capture written under the current rules and the message bytes
with ``--full`` (docs/capture-format.md, "end")."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcptap.capture.writer import CaptureWriter
from mcptap.check.reannotated import Reannotated
from mcptap.model import Direction
from mcptap.protocol.fingerprint import rules_fingerprint
from mcptap.recorder import Recorder
from mcptap.show import render

REQ = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
RES = b'{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}'
NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}'


def http_capture(path: Path, end: bool = True) -> Path:
    ticks = itertools.count(1000, 1000)
    rec = Recorder(CaptureWriter.open(str(path)), "http", {"url": "http://127.0.0.1:9/mcp"}, clock=lambda: next(ticks),
                   started="2026-01-01T00:00:00.000000Z")
    head = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    rec.forwarded(Direction.C2S, head % len(REQ) + REQ)
    rec.frame(Direction.C2S, REQ, transport={"exchange": 1, "conn": 1, "http": "post"})
    sse = b"event: message\ndata: " + NOTE + b"\n\nevent: message\ndata: " + RES + b"\n\n"
    rec.forwarded(Direction.S2C, b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                  + b"%x\r\n" % len(sse) + sse + b"\r\n0\r\n\r\n")
    rec.frame(Direction.S2C, NOTE, transport={"exchange": 1, "conn": 1, "http": "post"})
    rec.frame(Direction.S2C, RES, transport={"exchange": 1, "conn": 1, "http": "post"})
    if end:
        rec.close()
    else:
        rec.writer.close()       # type: ignore[union-attr]
    return path


def _json(path: Path, full: bool) -> list[dict[str, Any]]:
    ra = Reannotated.open(str(path), reuse=not full)
    return [orjson.loads(x) for x in render.json_lines(ra, ra.header)][-2:]      # the end record, the summary


@pytest.mark.parametrize("end", [True, False])
def test_the_byte_figure_is_the_same_on_every_path(tmp_path: Path, end: bool) -> None:
    path = http_capture(tmp_path / "http.jsonl", end)
    assert orjson.loads(path.read_bytes().split(b"\n", 1)[0])["rules"] == rules_fingerprint()     # the reuse path applies
    reuse, full = _json(path, False), _json(path, True)
    for a, b in zip(reuse, full, strict=True):
        for d in ("c2s", "s2c"):
            assert a["bytes" if a["type"] == "summary" else d] == b["bytes" if b["type"] == "summary" else d]
    if end:
        assert reuse == full
    end_rec, summary = reuse
    # what the messages hold (HTTP bodies and event data have no line end of their own: eol "")
    assert summary["bytes"] == {"c2s": len(REQ), "s2c": len(NOTE) + len(RES)}
    assert end_rec["c2s"]["messages"] == 1 and end_rec["s2c"]["messages"] == 2
    ra = Reannotated.open(str(path))
    text = list(render.timeline(ra, ra.header))
    (line,) = [x for x in text if "bytes:" in x]
    assert line == f"  message bytes: c2s {len(REQ)}, s2c {len(NOTE) + len(RES)} (JSON bodies and SSE event data; HTTP heads and framing not counted)"
    if end:     # the capture file itself keeps the live tap's count of what it forwarded
        live = orjson.loads(path.read_bytes().splitlines()[-1])
        assert live["type"] == "end" and live["c2s"]["bytes"] > summary["bytes"]["c2s"]
