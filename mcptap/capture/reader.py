"""Reading captures: ``CaptureStream`` (streaming), ``read_capture`` (whole).

Readers accept a truncated last line (mcptap was killed mid-write) and report
it (``truncated``); any other damage raises ``CaptureReadError``, the one error
type of capture reading.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from mcptap.capture.chunk_search import find_chunk_record
from mcptap.capture.format import FORMAT, VERSION, message_from_record, migrate
from mcptap.capture.source import lines, open_input, opened, read_line
from mcptap.capture_ends import cut_header
from mcptap.errors import CaptureReadError
from mcptap.model import Message, Phase
from mcptap.protocol.jsonparse import LONG_DIGITS, parse_exact
from mcptap.records import RECORD_TYPES


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
                        raise CaptureReadError(f"{self.path}:{lineno - 1}: corrupt record (not JSON{_edited(pending)})") from None
                    pending = line
                    continue
                if pending is not None:
                    # a record cut by a failed write (disk full) that could not be
                    # truncated away: the writer's gap record follows it and says so
                    if not (isinstance(rec, dict) and rec.get("type") == "gap"):
                        raise CaptureReadError(f"{self.path}:{lineno - 1}: corrupt record (not JSON{_edited(pending)})")
                    pending = None
                    self.cut_records += 1
                if not isinstance(rec, dict) or not isinstance(rec.get("type"), str):
                    raise CaptureReadError(f"{self.path}:{lineno}: record is not an object with a type")
                if type(rec.get("id")) is float or "members" in rec or "findings" in rec or rec["type"] == "end":
                    rec = exact_ids(rec, line)
                bad = _malformed(rec)
                if bad is not None:
                    raise CaptureReadError(f"{self.path}:{lineno}: corrupt {rec['type']} record: {bad}")
                if self.version != VERSION:
                    rec = migrate(rec, self.version)
                if rec["type"] == "end":
                    self.end = rec
                yield rec
                if self.until_end and rec["type"] == "end":
                    return
            if pending is not None:
                if pending.endswith(b"\n"):
                    raise CaptureReadError(f"{self.path}:{lineno}: corrupt record (not JSON{_edited(pending)})")
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
        raise CaptureReadError(f"{path}: empty file, not an mcptap capture")
    try:
        header = orjson.loads(first)
    except orjson.JSONDecodeError:
        if not first.endswith(b"\n") and cut_header(first):
            raise CaptureReadError(f"{path}:1: damaged capture: its header line is cut short ({len(first)} bytes, "
                                   "the file ends inside it)") from None
        raise CaptureReadError(f"{path}:1: not an mcptap capture (first line is not JSON{_edited(first)})") from None
    if not isinstance(header, dict) or header.get("type") != "header" or header.get("format") != FORMAT:
        raise CaptureReadError(f"{path}:1: not an mcptap capture (no {FORMAT} header)")
    version = header.get("version")
    if not isinstance(version, int) or version < 1 or version > VERSION:
        raise CaptureReadError(f"{path}: capture format version {version!r} is not supported (this mcptap reads 1..{VERSION}; upgrade mcptap)")
    bad = _malformed_header(header)
    if bad is not None:
        raise CaptureReadError(f"{path}:1: corrupt header: {bad}")
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


_B64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_PHASES = frozenset(p.value for p in Phase)


_TYPES = frozenset(RECORD_TYPES)


def _malformed(rec: dict[str, Any]) -> str | None:
    """What is wrong with a record's field types, or None (cheap checks, so
    consumers can trust them; peer bytes themselves are never judged here).
    A type that is no capture record type is wrong too (docs/capture-format.md:
    show/check passed a hand-edited ``"type":"bogus"`` record silently)."""
    if rec["type"] not in _TYPES:
        return f"type {rec['type']!r} is not a capture record type (one of {', '.join(RECORD_TYPES)})"
    # (a present key is checked even when null, but seq: optional, and null in the writer's gap record)
    f = rec.get("findings")     # (a version-1 end record's findings are its counts: migrated later)
    if "findings" in rec and rec["type"] != "end" and not (
            isinstance(f, list) and all(isinstance(x, dict) and isinstance(x.get("code"), str) for x in f)):
        return "findings is not a list of {code, severity, message}"
    seq = rec.get("seq")
    if seq is not None and not _is_int(seq):
        return _not_int("seq", seq)
    t = rec.get("t_us")
    if "t_us" in rec and not _is_int(t) and not (t is None and rec["type"] == "message"):     # (that one: "without t_us")
        return _not_int("t_us", t)
    if rec["type"] == "message":
        if rec.get("dir") not in ("c2s", "s2c"):
            return f"dir {rec.get('dir')!r} is not c2s or s2c"
        if not isinstance(seq, int):
            return "message without seq"
        if t is None:
            return "message without t_us"
        for key in ("raw", "raw_b64", "session", "method", "eol", "rev", "phase"):
            v = rec.get(key)
            if v is not None and not isinstance(v, str):
                return f"{key} is {_kind(v)}, not a string"
        for key in ("raw", "raw_b64"):
            # the bytes, when present, are what every reader takes over json: null is none of them
            if key in rec and rec[key] is None:
                return f"{key} is null, not a string"
        if "eol" in rec and not (isinstance(rec["eol"], str) and rec["eol"].isascii()):
            return f"eol {rec['eol']!r} is not an ASCII string"
        for key in ("pair", "latency_us", "link"):
            v = rec.get(key)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
                return f"{key} {v!r} is not an integer"
        if "raw_b64" in rec and (len(rec["raw_b64"]) % 4 or not _B64.fullmatch(rec["raw_b64"])):
            return "raw_b64 is not base64"
        if "raw" not in rec and "raw_b64" not in rec and "json" not in rec:
            return "neither json nor raw bytes"
        if not isinstance(rec.get("kind"), str):
            return "kind missing"
        if not isinstance(rec.get("transport", {}), dict):
            return "transport is not an object"
    elif rec["type"] == "http":
        return _malformed_http(rec)
    elif rec["type"] == "end":
        return _malformed_end(rec)
    elif rec["type"] == "eof":
        if rec.get("session") is not None and not isinstance(rec["session"], str):
            return f"session is {_kind(rec['session'])}, not a string"
    elif rec["type"] == "context":
        return _malformed_context(rec)
    elif rec["type"] in ("stderr", "chunk"):
        # the bytes every reader decodes (check's tallies, show, report): a wrong type or bad
        # base64 is this record's fault, not an internal error of theirs
        for key in ("data", "data_b64"):
            v = rec.get(key)
            if v is not None and not isinstance(v, str):
                return f"{key} is {_kind(v)}, not a string"
        b64 = rec.get("data_b64")
        if b64 is not None and (len(b64) % 4 or not _B64.fullmatch(b64)):
            return "data_b64 is not base64"
    return None


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_KINDS = {bool: "a boolean", int: "an integer", float: "a number", dict: "an object", list: "a list", type(None): "null"}


def _kind(v: Any) -> str:
    """What JSON value ``v`` is, for an error message ("an object", "a list", …)."""
    return _KINDS.get(type(v), f"a {type(v).__name__}")


def _not_int(key: str, v: Any) -> str:
    """Why ``v`` is not an integer field: orjson reads an integer literal
    beyond 64 bits as a float, which ``!r`` would print as if it were one."""
    if type(v) is float and v.is_integer() and abs(v) >= 2**63:
        return f"{key} is beyond 64 bits ({v:.4g})"
    return f"{key} {v!r} is not an integer"


#: what a context record's ``state`` may say (``Annotator.assume``'s arguments), and of which type
_CONTEXT_STATE = {"phase": str, "revision": str, "session": str, "client_caps": dict, "server_caps": dict}


def _malformed_context(rec: dict[str, Any]) -> str | None:
    """The state a capture that started mid-session assumes (re-annotation starts from it)."""
    state = rec.get("state")
    if not isinstance(state, dict):
        return "state is not an object"
    for key, v in state.items():
        if key not in _CONTEXT_STATE:
            return f"state has an unknown key {key!r} (known: {', '.join(_CONTEXT_STATE)})"
        if v is not None and not isinstance(v, _CONTEXT_STATE[key]):
            return f"state.{key} is {_kind(v)}, not a{'n object' if _CONTEXT_STATE[key] is dict else ' string'}"
    if state.get("phase") is not None and state["phase"] not in _PHASES:
        return f"state.phase {state['phase']!r} is not a phase ({', '.join(sorted(_PHASES))})"
    return None


def _malformed_http(rec: dict[str, Any]) -> str | None:
    """An http record's fields that the HTTP commands (show, diff, export, replay) read."""
    if not isinstance(rec.get("event"), str):
        return "event missing"
    for key in ("exchange", "conn", "status"):
        if key in rec and not _is_int(rec[key]):
            return f"{key} {rec[key]!r} is not an integer"
    for key in ("method", "target", "reason", "version"):
        if key in rec and not isinstance(rec[key], str):
            return f"{key} is {_kind(rec[key])}, not a string"
    h = rec.get("headers", [])
    if not isinstance(h, list) or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in h):
        return "headers is not a list of [name, value] pairs"
    return None


def _malformed_end(rec: dict[str, Any]) -> str | None:
    """The end record's counts, read by every summary (show, ls, report)."""
    for key in ("severities", "codes"):
        v = rec.get(key, {})
        if not isinstance(v, dict) or not all(_is_int(n) for n in v.values()):
            return f"{key} is not an object of counts"
    for key in ("pending", "cancelled_unanswered", "unanswered"):
        v = rec.get(key, [])
        if not isinstance(v, list) or not all(isinstance(p, dict) for p in v):
            return f"{key} is not a list of objects"
    for key in ("c2s", "s2c", "stderr", "chunks"):
        v = rec.get(key, {})
        if not isinstance(v, dict):
            return f"{key} is not an object"
        for count in ("bytes", "messages", "records"):
            if count in v and not _is_int(v[count]):
                return f"{key}.{count} {v[count]!r} is not an integer"
        if "sha256" in v and not isinstance(v["sha256"], str):
            return f"{key}.sha256 is not a string"
    return None


def _malformed_header(header: dict[str, Any]) -> str | None:
    """The header fields every command reads (transport, target, start time)."""
    for key in ("transport", "started", "mcptap", "rules"):
        v = header.get(key)
        if v is not None and not isinstance(v, str):
            return f"{key} is {_kind(v)}, not a string"
    if header.get("transport", "stdio") not in ("stdio", "http"):
        return f"transport {header['transport']!r} is not stdio or http"
    if not isinstance(header.get("target", {}), dict):
        return "target is not an object"
    return None


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


