"""The shared progress line of long commands (cli/progress.py): only on a
terminal, only after the delay, cleared at the end (no timing assertions:
the delay is set to 0 and the work waits for the first line)."""

from __future__ import annotations

import gzip
import io
import threading
from pathlib import Path

import orjson

from mcptap.capture.reader import CaptureStream, has_chunks
from mcptap.cli.progress import line, progress

HEADER = {"type": "header", "format": "mcptap-capture", "version": 1, "transport": "stdio", "target": {}}


class Tty(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.wrote = threading.Event()

    def isatty(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self.wrote.set()
        return super().write(s)


def _capture(path: Path, n: int, chunk: bool = False) -> None:
    recs = [HEADER] + [{"type": "stderr", "seq": i + 1, "t_us": i, "data": "x" * 100} for i in range(n)]
    if chunk:
        recs.append({"type": "chunk", "seq": n + 1, "t_us": n, "dir": "s2c", "offset": 0, "data": "{}\n"})
    data = b"".join(orjson.dumps(r) + b"\n" for r in recs)
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)


def test_progress_shows_bytes_read_on_a_terminal_and_clears(tmp_path: Path) -> None:
    cap = tmp_path / "c.jsonl"
    _capture(cap, 1000)
    out = Tty()
    with progress("check", [str(cap)], stream=out, delay=0):
        records = list(CaptureStream(str(cap)))
        assert out.wrote.wait(10)                      # hang guard: the line appears
    text = out.getvalue()
    assert len(records) == 1000
    assert "mcptap: check: 0." in text and "MB read (" in text
    assert text.endswith("\r\x1b[K")                  # cleared at the end


def test_progress_is_silent_off_a_terminal(tmp_path: Path) -> None:
    out = io.StringIO()
    with progress("check", [], stream=out, delay=0):
        pass
    assert out.getvalue() == ""


def test_progress_text() -> None:
    assert line("show", 12_300_000, 24_600_000, 3.2) == "mcptap: show: 12.3 MB read (50%), 3 s"
    assert line("diff", 5_000_000, None, 1.0) == "mcptap: diff: 5.0 MB read, 1 s"
    assert "(99%)" in line("check", 10, 5, 0)         # a second pass never shows more than 99%


def test_has_chunks_finds_chunk_records_in_plain_and_gzip_files(tmp_path: Path) -> None:
    for name in ("a.jsonl", "a.jsonl.gz"):
        with_chunk, without = tmp_path / f"y{name}", tmp_path / f"n{name}"
        _capture(with_chunk, 20000, chunk=True)        # the chunk record lands past the first 1 MiB
        _capture(without, 20000)
        assert has_chunks(str(with_chunk)) and not has_chunks(str(without))
    assert not has_chunks(str(tmp_path / "missing.jsonl"))


def test_progress_never_says_more_read_than_the_file_holds() -> None:
    # check's parent and its forked child both read where the halves meet: 46.8 MB were
    # counted on a 46.4 MB capture (user breaker)
    assert line("check", 46_800_000, 46_400_000, 3.0) == "mcptap: check: 46.4 MB read (99%), 3 s"
    assert line("check", 46_800_000, None, 3.0) == "mcptap: check: 46.8 MB read, 3 s"
