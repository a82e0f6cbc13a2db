"""mcptap.catalog: the last line is found by seeking back from the end (any
chunking), a huge capture is summarised without reading its middle, and
retention selection by age and per-name rank."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcptap import capture_ends, catalog
from mcptap.catalog import COMPLETE, CaptureInfo, read_info, select_prune

LINES = st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), min_size=1, max_size=8)


@given(LINES, st.integers(1, 50), st.booleans())
def test_last_line_any_chunking(lines: list[bytes], step: int, newline: bool) -> None:
    data = b"\n".join(lines) + (b"\n" if newline else b"")
    old = capture_ends._TAIL_STEP
    capture_ends._TAIL_STEP = step
    try:
        got = capture_ends.last_line(io.BytesIO(data), len(data))
    finally:
        capture_ends._TAIL_STEP = old
    assert got == (data[:-1].split(b"\n")[-1] if data.endswith(b"\n") else None)


def test_huge_capture_is_summarised_from_its_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    header = {"type": "header", "format": "mcptap-capture", "version": 1, "started": "2026-12-01T00:00:00.000000Z",
              "transport": "stdio", "target": {"argv": ["python", "srv.py"]}, "name": "big"}
    msg = {"type": "message", "seq": 1, "t_us": 1, "dir": "s2c", "kind": "response", "rev": "2025-11-25", "json": {}}
    end = {"type": "end", "seq": 3, "t_us": 9, "c2s": {"messages": 7}, "s2c": {"messages": 5}, "severities": {"error": 0, "warn": 2, "info": 1},
           "exit_code": 0}
    path = tmp_path / "big.jsonl"
    with open(path, "wb") as fp:
        fp.write(orjson.dumps(header) + b"\n" + orjson.dumps(msg) + b"\n")
        fp.seek(8 * 1024**3)                     # a sparse 8 GiB hole: reading it all would take minutes
        fp.write(b"\n" + orjson.dumps(end) + b"\n")
    read = [0]

    class Counting(io.FileIO):
        def readinto(self, buffer: Any) -> int:
            n = super().readinto(buffer)
            read[0] += n or 0
            return n

    monkeypatch.setattr(catalog, "open", lambda p, mode="rb": io.BufferedReader(Counting(p, "r")), raising=False)
    info = read_info(path)
    assert 0 < read[0] < 1024 * 1024, f"read {read[0]} bytes of an 8 GiB capture"
    assert info is not None and info.status == COMPLETE and info.messages == 12 and info.name == "big"
    assert info.severities == {"warn": 2, "info": 1} and info.revision == "2025-11-25" and info.size > 8 * 1024**3


def _info(name: str, started: str, mtime: float, status: str = COMPLETE) -> CaptureInfo:
    return CaptureInfo(path=f"/c/{started}-{name}", started=started, name=name, transport="stdio", revision=None,
                       messages=1, severities={}, status=status, size=1, mtime=mtime)


@pytest.mark.parametrize("older_than, keep, gone", [
    (None, 1, {"a1", "a2", "b1"}),            # the live b2 is b's newest: it counts, and stays
    (50.0, None, {"a1", "a2", "b1"}),
    (50.0, 2, {"a1"}),
    (None, None, set()),
])
def test_select_prune(older_than: float | None, keep: int | None, gone: set[str]) -> None:
    infos = [_info("a", "1", 0), _info("a", "2", 10), _info("a", "3", 90), _info("b", "1", 0), _info("b", "2", 5, status="recording")]
    names = {f"{i.name}{i.started}" for i in select_prune(infos, now=100.0, older_than=older_than, keep=keep)}
    assert names == gone


def test_gzip_ends_read_a_padded_stream_whole_and_a_cut_one_as_far_as_it_goes(tmp_path: Path) -> None:
    import gzip

    from mcptap.catalog import DAMAGED, TRUNCATED

    header = b'{"type":"header","format":"mcptap-capture","version":1,"started":"2026-12-01T00:00:00Z","transport":"stdio"}\n'
    end = b'{"type":"end","seq":2,"t_us":9,"c2s":{"messages":0},"s2c":{"messages":0}}\n'
    two = gzip.compress(header) + gzip.compress(end) + b"\0" * 1000         # two members, then padding
    assert capture_ends.gzip_ends(io.BytesIO(two)) == (header + end, end[:-1])
    (tmp_path / "a.jsonl.gz").write_bytes(two)
    assert (info := read_info(tmp_path / "a.jsonl.gz")) is not None and info.status == COMPLETE
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(header + end)[:-10])     # cut: no end
    assert (info := read_info(tmp_path / "b.jsonl.gz")) is not None and info.status == TRUNCATED
    whole = gzip.compress(header * 50)
    cut = next(n for n in range(len(whole)) if 0 < len(zlib_head(whole[:n])) < len(header) - 1)
    (tmp_path / "c.jsonl.gz").write_bytes(whole[:cut])                          # cut within the header line
    assert (info := read_info(tmp_path / "c.jsonl.gz")) is not None and info.status == DAMAGED


def zlib_head(data: bytes) -> bytes:
    import zlib

    return zlib.decompressobj(31).decompress(data)


def test_a_header_cut_anywhere_is_damaged_plain_or_gzip(tmp_path: Path) -> None:
    """A file that ends inside its header line, at any byte (past the writer's
    42-byte prefix too), is DAMAGED: never a TRUNCATED capture with every field
    unknown (README: "damaged": header cut); the whole line is a capture."""
    import gzip

    from mcptap.catalog import DAMAGED, TRUNCATED

    header = (b'{"type":"header","format":"mcptap-capture","version":1,"started":"2026-12-01T00:00:00Z",'
              b'"transport":"stdio","target":{"argv":["python3","server.py","--flag"]},"name":"srv"}\n')
    for n in range(1, len(header)):
        plain, packed = tmp_path / f"p{n}.jsonl", tmp_path / f"g{n}.jsonl.gz"
        plain.write_bytes(header[:n])
        packed.write_bytes(gzip.compress(header[:n]))
        for p in (plain, packed):
            assert (info := read_info(p)) is not None and info.status == DAMAGED, (n, p)
    (tmp_path / "whole.jsonl").write_bytes(header)
    assert (info := read_info(tmp_path / "whole.jsonl")) is not None and info.status == TRUNCATED
    assert info.name == "srv"


@pytest.mark.parametrize("failure", [{"recorder_error": "TypeError: boom"}, {"capture_error": "No space left on device", "dropped_records": 3}])
def test_a_capture_whose_recording_stopped_is_incomplete_with_its_error(tmp_path: Path, failure: dict[str, Any]) -> None:
    """An end record saying recording stopped (the recorder raised: a gap record and
    ``recorder_error``) or failed (writing: ``capture_error``) is no complete, error-free
    capture: ``ls`` said so while ``check`` reported the ``capture.gap`` error."""
    from click.testing import CliRunner

    from mcptap.capture.writer import CaptureWriter
    from mcptap.cli.main import mcptap
    from mcptap.model import Direction
    from mcptap.recorder import Recorder
    from scripted import handshake

    path = tmp_path / "stopped.jsonl"
    rec = Recorder(CaptureWriter.open(str(path)), "stdio", {"argv": ["srv"]}, clock=lambda: 1000, started="2026-01-01T00:00:00Z")
    for kind, data in handshake():
        rec.stdio_bytes(Direction(kind), data)
    if "recorder_error" in failure:
        rec.gap(f"recorder failed: {failure['recorder_error']}")
        rec.close(exit_code=0, **failure)
    else:       # as the writer's own end record says it (a full disk)
        rec.close(exit_code=0)
        lines = path.read_bytes().splitlines()
        path.write_bytes(b"\n".join([*lines[:-1], orjson.dumps({**orjson.loads(lines[-1]), **failure})]) + b"\n")
    info = read_info(path)
    assert info is not None and info.status == catalog.INCOMPLETE and info.status != COMPLETE
    checked = orjson.loads(CliRunner().invoke(mcptap, ["check", "--format", "json", "--fail-on", "never", str(path)]).output)
    assert info.severities.get("error", 0) == checked["findings"]["error"] == 1
