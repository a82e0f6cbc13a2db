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
from scripted import c2s, chunk_capture, handshake, record, req


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


@pytest.mark.parametrize("damage", ["cut", "corrupt"])
def test_a_damaged_gzip_capture_keeps_the_chunk_records_before_the_damage(tmp_path: Path, damage: str) -> None:
    """Breaker's F1: a gzip capture cut short (its last byte gone; docs/capture-format.md) with
    chunk records: ``has_chunks`` met the EOFError of the cut stream and said False, though it
    had read past chunk records (``GzipFile.read(n)`` drops what it gathered when it raises),
    so ``check FILE.gz``, ``show``, ``report`` reused the recorded annotations and refused the
    first chunk record (exit 2, "give the capture as a file, not on stdin": it was a file)."""
    plain = chunk_capture(tmp_path / "c.jsonl").read_bytes()
    gz = gzip.compress(plain)
    damaged = tmp_path / "d.jsonl.gz"
    if damage == "cut":
        damaged.write_bytes(gz[:-1])
    else:           # the deflate data damaged near its end: the bytes before still decompress
        at = len(gz) - 40
        damaged.write_bytes(gz[:at] + bytes(b ^ 0xFF for b in gz[at:at + 8]) + gz[at + 8:])
    assert has_chunks(str(damaged))
    runner = CliRunner()
    for cmd in (["check"], ["show"], ["export", "--format", "messages"]):
        from_file = runner.invoke(mcptap, [*cmd, str(damaged)])
        on_stdin = runner.invoke(mcptap, [*cmd, "-"], input=damaged.read_bytes())
        assert "not on stdin" not in from_file.output
        assert from_file.exit_code == on_stdin.exit_code, (cmd, from_file.output)
        assert from_file.output.replace(str(damaged), "-") == on_stdin.output, cmd
    # a cut capture is checked (reported truncated); a corrupt one is the reader's error, the same either way
    assert runner.invoke(mcptap, ["check", str(damaged)]).exit_code == (0 if damage == "cut" else 2)


def test_a_cut_gzip_http_capture_is_checked_as_on_stdin(tmp_path: Path) -> None:
    """The other probe of the fast check (``parallel._unmarked_refusals``, an HTTP capture
    re-annotated) let the cut stream's EOFError out: ``check --full FILE.gz`` said
    "interrupted" (exit 130)."""
    src = Path(__file__).parent / "data" / "false-finding-http400-probe.jsonl"
    cut = tmp_path / "h.jsonl.gz"
    cut.write_bytes(gzip.compress(src.read_bytes())[:-1])
    runner = CliRunner()
    from_file = runner.invoke(mcptap, ["check", "--full", str(cut)])
    on_stdin = runner.invoke(mcptap, ["check", "--full", "-"], input=cut.read_bytes())
    assert from_file.exit_code == on_stdin.exit_code == 0, from_file.output
    assert from_file.output.replace(str(cut), "-") == on_stdin.output
