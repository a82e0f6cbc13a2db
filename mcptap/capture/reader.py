"""Reading captures: ``CaptureStream`` (streaming), ``read_capture`` (whole).

Readers accept a truncated last line (mcptap was killed mid-write) and report
it (``truncated``); any other damage raises ``CaptureReadError``, the one error
type of capture reading.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from mcptap.capture.chunk_search import find_chunk_record
from mcptap.capture.format import FORMAT, VERSION, message_from_record, migrate
from mcptap.capture.record_checks import malformed as _malformed  # (a module global: tests plant a bug in it)
from mcptap.capture.record_checks import malformed_header
from mcptap.capture.source import lines, open_input, opened, read_line
from mcptap.capture_ends import cut_header
from mcptap.errors import CaptureReadError
from mcptap.escape import escape_name
from mcptap.model import Message
from mcptap.protocol.jsonparse import LONG_DIGITS, parse_exact


@dataclass(slots=True)
class Capture:
    """A whole capture in memory: ``header`` dict, ``records`` (all records
    after the header, end included), ``end`` dict or None (mcptap did not end
    normally), ``truncated`` (last line cut), ``path``."""

    header: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None
    truncated: bool = False
    path: str | None = None

    def messages(self) -> list[Message]:
        return [message_from_record(r) for r in self.records if r.get("type") == "message"]


class CaptureStream:
    """Streaming reader: iterate records without holding the file in memory.

    ``header`` is read on construction; iterating yields every later record as
    a dict (migrated to the current version). After iteration ``truncated`` and
    ``end`` are set. Raises CaptureReadError (missing file, not a capture,
    unsupported version, corrupt line other than the last). ``name``: how
    messages name the capture when ``path`` is a stand-in for it (standard
    input spooled to a temporary file is still ``-``); default ``path``."""

    def __init__(self, path: str, name: str | None = None) -> None:
        self.path = name or path
        self._fp = open_input(path)     # "-" is stdin; gzip is decompressed
        try:
            first = read_line(self._fp, self.path)
        except CaptureReadError:
            self._fp.close()
            raise
        try:
            header = parse_header(first, self.path)
        except CaptureReadError:
            self._fp.close()
            raise
        self.version: int = header["version"]
        self.header = header
        #: the file ends inside its header line (its newline cut): a capture cut short, as a cut last record is
        self.truncated = not first.endswith(b"\n")
        #: records cut by a failed write, each followed by the gap record saying so
        self.cut_records = 0
        self.end: dict[str, Any] | None = None
        #: stop after the end record instead of reading on to EOF (a capture piped in as it is written)
        self.until_end = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        fp = self._fp
        lineno = 1
        try:
            pending: bytes | None = None
            for line in lines(fp, self.path):
                lineno += 1
                try:
                    rec = orjson.loads(line)
                except orjson.JSONDecodeError:
                    if pending is not None:
                        raise CaptureReadError(f"{escape_name(self.path)}:{lineno - 1}: corrupt record (not JSON{_edited(pending)})") from None
                    pending = line
                    continue
                if pending is not None:
                    # a record cut by a failed write (disk full) that could not be
                    # truncated away: the writer's gap record follows it and says so
                    if not (isinstance(rec, dict) and rec.get("type") == "gap"):
                        raise CaptureReadError(f"{escape_name(self.path)}:{lineno - 1}: corrupt record (not JSON{_edited(pending)})")
                    pending = None
                    self.cut_records += 1
                if not isinstance(rec, dict) or not isinstance(rec.get("type"), str):
                    raise CaptureReadError(f"{escape_name(self.path)}:{lineno}: record is not an object with a type")
                if type(rec.get("id")) is float or "members" in rec or "findings" in rec or rec["type"] == "end":
                    rec = exact_ids(rec, line)
                bad = _malformed(rec)
                if bad is not None:
                    raise CaptureReadError(f"{escape_name(self.path)}:{lineno}: corrupt {rec['type']} record: {bad}")
                if self.version != VERSION:
                    rec = migrate(rec, self.version)
                if rec["type"] == "end":
                    self.end = rec
                yield rec
                if self.until_end and rec["type"] == "end":
                    return
            if pending is not None:
                if pending.endswith(b"\n"):
                    raise CaptureReadError(f"{escape_name(self.path)}:{lineno}: corrupt record (not JSON{_edited(pending)})")
                self.truncated = True
        finally:
            fp.close()

    def close(self) -> None:
        self._fp.close()


def parse_header(first: bytes, path: str) -> dict[str, Any]:
    """The header record of a capture whose first line (as read, newline kept) is
    ``first``: every command that reads a header reads it here, so each says the
    same of the same file. Raises CaptureReadError: an empty file; a header line
    cut short (the file ends inside it: a truncated file, a tap killed while
    writing it), "damaged" as ``ls`` calls it; a first line that is not JSON or
    not an mcptap header; a format version this mcptap cannot read; a header
    without the fields every command reads."""
    if not first:
        raise CaptureReadError(f"{escape_name(path)}: empty file, not an mcptap capture")
    try:
        header = orjson.loads(first)
    except orjson.JSONDecodeError:
        if not first.endswith(b"\n") and cut_header(first):
            raise CaptureReadError(f"{escape_name(path)}:1: damaged capture: its header line is cut short ({len(first)} bytes, "
                                   "the file ends inside it)") from None
        raise CaptureReadError(f"{escape_name(path)}:1: not an mcptap capture (first line is not JSON{_edited(first)})") from None
    if not isinstance(header, dict) or header.get("type") != "header" or header.get("format") != FORMAT:
        raise CaptureReadError(f"{escape_name(path)}:1: not an mcptap capture (no {FORMAT} header)")
    version = header.get("version")
    if not isinstance(version, int) or version < 1 or version > VERSION:
        raise CaptureReadError(f"{escape_name(path)}: capture format version {version!r} is not supported (this mcptap reads 1..{VERSION}; upgrade mcptap)")
    bad = malformed_header(header)
    if bad is not None:
        raise CaptureReadError(f"{escape_name(path)}:1: corrupt header: {bad}")
    return header


def _edited(line: bytes) -> str:
    """Why a line that is not JSON looks like an editor's doing (the writer
    never writes a byte-order mark or a blank line), for the error text."""
    if line.startswith(b"\xef\xbb\xbf"):
        return ": it starts with a UTF-8 byte-order mark; was the file re-saved by an editor?"
    if not line.strip():
        return ": a blank line; was the file re-saved by an editor?"
    return ""


def exact_ids(rec: dict[str, Any], line: bytes) -> dict[str, Any]:
    """orjson reads an integer beyond 64 bits (a peer's JSON-RPC id 2**64+1;
    the writer stores it exactly) as a float: parse such a record again with
    exact integers. Only records that can hold one are checked (a float ``id``,
    batch ``members``, the ``end`` record's unanswered requests, and a record
    whose findings carry ``data`` and whose line has a run of 19+ digits: the
    data names requests by id, e.g. an eof record's pending ones). Callers on a hot path
    call it only when :func:`may_hold_big_ids`."""
    if not may_hold_big_ids(rec):
        return rec                                          # the common case: a few dict lookups
    if rec.get("type") != "end" and type(rec.get("id")) is not float and not any(
            isinstance(m, dict) and type(m.get("id")) is float for m in rec.get("members") or ()) and not (
            _has_data(rec.get("findings")) and LONG_DIGITS.search(line)):
        return rec
    exact = parse_exact(line)
    return exact[0] if exact is not None and isinstance(exact[0], dict) else rec


def _has_data(findings: Any) -> bool:
    """Whether a record's findings carry ``data`` (where requests are named by id)."""
    return type(findings) is list and any(type(f) is dict and "data" in f for f in findings)


def may_hold_big_ids(rec: dict[str, Any]) -> bool:
    """Whether :func:`exact_ids` may change ``rec`` (cheap: dict lookups)."""
    return type(rec.get("id")) is float or "members" in rec or "findings" in rec or rec.get("type") == "end"



def has_chunks(path: str) -> bool:
    """True when the capture file holds ``chunk`` records (stdio bytes stored
    unframed because live analysis fell behind): its recorded annotations are
    incomplete and readers re-annotate it from the bytes. A byte search for a
    ``"type": "chunk"`` member in any spacing (a capture rewritten by another
    JSON encoder), each hit confirmed by parsing its line (the text may sit in
    a payload); a gzip file is searched as it decompresses. False when the
    file cannot be read (the reader reports that) and for standard input, a
    FIFO or any other file that is not a regular one (they cannot be read
    twice)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False        # a FIFO or <(…) is read once, by the reader (and opening one may wait for a writer)
        # read in blocks, not mapped: a mapping's pages count in the reader's RSS, so
        # searching a 276 MB capture took show's peak RSS from ~45 MB to ~300 MB
        with opened(path) as src:
            return find_chunk_record(src)
    except (OSError, ValueError, EOFError):
        return False


def reusable(path: str) -> bool:
    """Whether a capture read from ``path`` may keep its recorded annotations
    as far as chunk records go: a regular file (searched for them first,
    :func:`has_chunks`) that holds none. Standard input (``-``), a FIFO or
    ``<(…)`` path, or anything else that cannot be read twice may hold some,
    which only re-annotation from the start reads: False, as for a missing
    path (the reader says what is wrong with it)."""
    if path == "-":
        return False
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
    except OSError:
        return False
    return not has_chunks(path)


def read_capture(path: str) -> Capture:
    """Read a whole capture. Raises CaptureReadError."""
    stream = CaptureStream(path)
    records = list(stream)
    return Capture(stream.header, records, stream.end, stream.truncated, path)


