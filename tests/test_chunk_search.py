"""``has_chunks`` (mcptap/capture/reader.py, chunk_search.py): chunk records are found
whatever JSON spacing and key order the capture was written with, and only
where a record really is one (tester's report: a capture rewritten with
``json.dumps`` defaults made scrub refuse the file as if it were stdin)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcptap.capture.reader import has_chunks
from mcptap.cli.main import mcptap
from scripted import c2s, handshake, record, req


def _write(path: Path, recs: list[dict], dumps=json.dumps) -> Path:
    data = "".join(dumps(r) + "\n" for r in recs).encode()
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


HEADER = {"type": "header", "format": "mcptap-capture", "version": 1, "transport": "stdio"}
CHUNK = {"type": "chunk", "seq": 2, "t_us": 1, "dir": "c2s", "offset": 0, "data": "{}\n"}


@pytest.mark.parametrize("name", ["c.jsonl", "c.jsonl.gz"])
@pytest.mark.parametrize("dumps", [json.dumps, lambda r: json.dumps(r, indent=None, separators=(" , ", " :  ")),
                                   lambda r: json.dumps(dict(reversed(list(r.items()))))])
def test_any_spacing_and_key_order(tmp_path: Path, name: str, dumps) -> None:
    filler = [{"type": "stderr", "seq": 1, "t_us": 0, "data": "x" * 100}] * 15000      # past the first block
    assert has_chunks(str(_write(tmp_path / name, [HEADER, *filler, CHUNK], dumps)))
    assert not has_chunks(str(_write(tmp_path / ("n" + name), [HEADER, *filler], dumps)))


def test_a_payload_that_says_chunk_is_not_a_chunk_record(tmp_path: Path) -> None:
    msg = {"type": "message", "seq": 1, "t_us": 0, "dir": "s2c", "kind": "notification", "method": "x",
           "json": {"jsonrpc": "2.0", "method": "x", "params": {"type": "chunk", "pad": "y" * (3 << 20)}}}
    assert not has_chunks(str(_write(tmp_path / "p.jsonl", [HEADER, msg, msg])))
    # the same text cut by every block boundary position near a record's start
    for pad in range(0, 80, 7):
        stderr = {"type": "stderr", "seq": 1, "t_us": 0, "data": "z" * ((1 << 20) - 60 + pad)}
        assert has_chunks(str(_write(tmp_path / "b.jsonl", [HEADER, stderr, CHUNK], json.dumps)))
        assert not has_chunks(str(_write(tmp_path / "b.jsonl", [HEADER, stderr, msg], json.dumps)))


def test_scrub_re_frames_a_capture_written_with_spaces(tmp_path: Path) -> None:
    src = record(tmp_path / "src.jsonl", handshake() + [c2s(req(2, "tools/call", {"name": "x", "arguments": {"password": "PW12345678"}}))])
    recs = [json.loads(line) for line in src.read_text().splitlines()]
    # the tool call stored unframed, as live recording does when analysis falls behind
    i = next(n for n, r in enumerate(recs) if r.get("id") == 2)
    call = recs[i]
    recs[i] = {"type": "chunk", "seq": call["seq"], "t_us": call["t_us"], "dir": "c2s", "offset": call["offset"],
               "data": json.dumps(call["json"], separators=(",", ":")) + "\n"}
    cap = _write(tmp_path / "cap.jsonl", recs)
    out = tmp_path / "out.jsonl"
    res = CliRunner().invoke(mcptap, ["scrub", str(cap), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "PW12345678" not in out.read_text() and '"type":"chunk"' not in out.read_text()
