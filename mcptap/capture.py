"""The capture format (JSONL, versioned): writer, reader, migrations.

Documented in ``docs/capture-format.md``. One JSON object per line, UTF-8,
append-only. The first record is the ``header``; the last, when mcptap ended
normally, the ``end`` record. A message record keeps the exact forwarded bytes:
as ``json`` alone when ``orjson.dumps(json) + eol`` reproduces them (the
common case for SDK peers), else with ``raw`` (text) or ``raw_b64``.

Readers accept a truncated last line (mcptap was killed mid-write) and report
it in ``Capture.truncated``; any other damage raises ``CaptureReadError``.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import orjson

from mcptap.errors import CaptureReadError, CaptureWriteError
from mcptap.model import UNPARSED, Direction, Finding, Kind, Member, Message, Phase
from mcptap.protocol.framing import parse_json

FORMAT = "mcptap-capture"
VERSION = 1

#: Messages larger than this are stored as raw bytes only (no ``json``): the
#: bytes are the truth, and a 16 MiB message is not encoded twice. Readers
#: parse ``raw`` when ``json`` is absent.
RAW_ONLY_ABOVE = 1 << 20

_dumps = orjson.dumps


# -- encoding ---------------------------------------------------------------

def encode_bytes(data: bytes, key: str, rec: dict[str, Any]) -> None:
    """Store ``data`` under ``key`` as text when it is valid UTF-8, else under
    ``key + "_b64"``."""
    try:
        rec[key] = data.decode("utf-8")
    except UnicodeDecodeError:
        rec[key + "_b64"] = base64.b64encode(data).decode("ascii")


def decode_bytes(rec: dict[str, Any], key: str) -> bytes | None:
    """Inverse of ``encode_bytes``; None when neither field is present."""
    v = rec.get(key)
    if v is not None:
        return v.encode("utf-8")
    b = rec.get(key + "_b64")
    if b is not None:
        return base64.b64decode(b)
    return None


def annotation_record(msg: Message, findings: bool = False) -> dict[str, Any]:
    """The identifying and pairing fields of a ``message`` record (type, seq,
    t_us, dir, kind, session, id, method, pair, latency_us), plus the findings
    when ``findings``: what annotation-only consumers (check) need."""
    rec: dict[str, Any] = {"type": "message", "seq": msg.seq, "t_us": msg.t_us, "dir": msg.direction._value_, "kind": msg.kind._value_}
    if msg.session is not None:
        rec["session"] = msg.session
    if msg.has_id:
        rec["id"] = msg.id
    if msg.method is not None:
        rec["method"] = msg.method
    if msg.pair is not None:
        rec["pair"] = msg.pair
        rec["latency_us"] = msg.latency_us
    if findings and msg.findings:
        rec["findings"] = [f.to_json() for f in msg.findings]
    return rec


def message_record(msg: Message, eol: bytes = b"\n", canonical: bool = False) -> dict[str, Any]:
    """The ``message`` record of one annotated Message (a dict ready for dumps).

    ``eol``: the terminator the transport normally appends (``b"\\n"`` on stdio,
    ``b""`` for HTTP payloads); it decides whether ``json`` alone is lossless.
    ``canonical``: the caller knows ``raw == dumps(json) + eol`` (it rebuilt
    the bytes from ``json``), so the check is skipped.
    """
    rec = annotation_record(msg)
    if msg.phase is not None:
        rec["phase"] = msg.phase._value_
    if msg.revision is not None:
        rec["rev"] = msg.revision
    value = msg.value
    raw = msg.raw
    if value is not UNPARSED and len(raw) <= RAW_ONLY_ABOVE:
        rec["json"] = value
        try:
            if canonical:
                exact = True
            else:
                dumped = _dumps(value)
                n = len(dumped)
                # compare in place: no copy of a 16 MiB message just to check it
                exact = len(raw) == n + len(eol) and raw.endswith(eol) and memoryview(raw)[:n] == dumped
        except (TypeError, orjson.JSONEncodeError):
            exact = False
            del rec["json"]
        if not exact:
            encode_bytes(raw, "raw", rec)
    else:
        encode_bytes(raw, "raw", rec)
    if eol != b"\n":
        rec["eol"] = eol.decode("ascii")
    if msg.findings:
        rec["findings"] = [f.to_json() for f in msg.findings]
    if msg.link is not None:
        rec["link"] = msg.link
    if msg.members is not None:
        rec["members"] = [_member_json(m) for m in msg.members]
    if msg.transport:
        rec["transport"] = msg.transport
    rec["offset"] = msg.offset
    return rec


def _member_json(m: Member) -> dict[str, Any]:
    d: dict[str, Any] = {"index": m.index, "kind": m.kind.value}
    if m.id is not None:
        d["id"] = m.id
    if m.method is not None:
        d["method"] = m.method
    if m.pair is not None:
        d["pair"] = m.pair
        d["latency_us"] = m.latency_us
    return d


def message_from_record(rec: dict[str, Any]) -> Message:
    """Rebuild a Message (raw bytes exact) from a ``message`` record.
    Raises CaptureReadError if the record lacks its bytes."""
    raw = decode_bytes(rec, "raw")
    value: Any = rec.get("json", UNPARSED)
    if raw is None:
        if "json" not in rec:
            raise CaptureReadError(f"message record seq {rec.get('seq')} has neither json nor raw bytes")
        raw = _dumps(value) + rec.get("eol", "\n").encode("ascii")
    elif "json" not in rec:
        value, _ = parse_json(raw)
    members = None
    if "members" in rec:
        members = [Member(m["index"], Kind(m["kind"]), m.get("id"), m.get("method"), m.get("pair"), m.get("latency_us")) for m in rec["members"]]
    try:
        return Message(
            seq=rec["seq"], t_us=rec["t_us"], direction=Direction(rec["dir"]), raw=raw, value=value,
            kind=Kind(rec["kind"]), session=rec.get("session"), id=rec.get("id"), has_id="id" in rec,
            method=rec.get("method"), pair=rec.get("pair"), latency_us=rec.get("latency_us"),
            phase=Phase(rec["phase"]) if rec.get("phase") else None, revision=rec.get("rev"),
            findings=[Finding.from_json(f) for f in rec.get("findings", ())], members=members,
            offset=rec.get("offset", 0), transport=rec.get("transport"), link=rec.get("link"),
        )
    except (KeyError, ValueError) as exc:
        raise CaptureReadError(f"message record seq {rec.get('seq')} is malformed: {exc}") from None


# -- writing ----------------------------------------------------------------

class CaptureWriter:
    """Append records to a capture file (owner-only permissions, 0600).

    Records are buffered and written with one ``os.write`` per ``flush()``;
    the recorder flushes after every chunk it processes, so a ``kill -9`` loses
    at most what arrived in the chunk being handled. A failed write (disk full)
    never raises into the relay: ``failed`` becomes the error text, dropped
    records are counted in ``dropped`` and a ``gap`` record is attempted.
    Raises CaptureWriteError only from ``open`` (the file cannot be created).
    """

    def __init__(self, fd: int, path: str | None = None) -> None:
        self._fd = fd
        self.path = path
        self._buf: list[bytes] = []
        self.failed: str | None = None
        self.dropped = 0
        self._unreported = 0
        self.written_bytes = 0
        self.closed = False

    @classmethod
    def open(cls, path: str) -> "CaptureWriter":
        try:
            parent = os.path.dirname(os.path.abspath(path))
            os.makedirs(parent, mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
            os.fchmod(fd, 0o600)
        except OSError as exc:
            raise CaptureWriteError(f"cannot create capture {path}: {exc.strerror or exc}") from None
        return cls(fd, path)

    @classmethod
    def to_file(cls, fp: IO[bytes]) -> "CaptureWriter":
        """Write to an already-open binary file (tests, stdout pipes)."""
        return cls(fp.fileno(), getattr(fp, "name", None))

    def write(self, rec: dict[str, Any]) -> None:
        """Queue one record (encoded now, written at the next flush)."""
        try:
            line = _dumps(rec, option=orjson.OPT_APPEND_NEWLINE)
        except (TypeError, orjson.JSONEncodeError) as exc:
            # our own bug, never peer data (peer bytes are stored as text/base64)
            line = _dumps({"type": "gap", "seq": rec.get("seq"), "reason": f"unencodable record: {exc}"}, option=orjson.OPT_APPEND_NEWLINE)
        self._buf.append(line)

    def flush(self) -> None:
        """Write queued records. After a failed write (disk full) the records
        are counted as dropped; every later flush tries again, and the first
        write that succeeds is preceded by a ``gap`` record saying how many
        records were lost and why. Never raises."""
        if not self._buf or self.closed:
            return
        data = b"".join(self._buf) if len(self._buf) > 1 else self._buf[0]
        n_records = len(self._buf)
        self._buf.clear()
        if self.failed is not None and self._unreported:
            gap = _dumps({"type": "gap", "seq": None, "reason": f"capture write failed: {self.failed}",
                          "dropped_records": self._unreported}, option=orjson.OPT_APPEND_NEWLINE)
            if self._write_all(gap):
                self._unreported = 0
            else:
                self.dropped += n_records
                self._unreported += n_records
                return
        if not self._write_all(data):
            self.dropped += n_records
            self._unreported += n_records

    def _write_all(self, data: bytes) -> bool:
        view = memoryview(data)
        try:
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
                self.written_bytes += n
        except OSError as exc:
            self.failed = exc.strerror or str(exc)
            if len(view) != len(data):
                # a partial record is on disk: end it so the next record starts on its own line
                try:
                    os.write(self._fd, b"\n")
                except OSError:
                    pass
            return False
        return True

    def close(self) -> None:
        if self.closed:
            return
        self.flush()
        self.closed = True
        try:
            os.close(self._fd)
        except OSError:
            pass


# -- reading ----------------------------------------------------------------

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


#: version -> function upgrading a record of that version to version+1.
MIGRATIONS: dict[int, Any] = {}


def _migrate(rec: dict[str, Any], version: int) -> dict[str, Any]:
    while version < VERSION:
        rec = MIGRATIONS[version](rec)
        version += 1
    return rec


class CaptureStream:
    """Streaming reader: iterate records without holding the file in memory.

    ``header`` is read on construction; iterating yields every later record as
    a dict (migrated to the current version). After iteration ``truncated`` and
    ``end`` are set. Raises CaptureReadError (missing file, not a capture,
    unsupported version, corrupt line other than the last)."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self._fp = open(path, "rb")  # noqa: SIM115 - closed in __iter__/close
        except OSError as exc:
            raise CaptureReadError(f"cannot open capture {path}: {exc.strerror or exc}") from None
        first = self._fp.readline()
        if not first:
            self._fp.close()
            raise CaptureReadError(f"{path}: empty file, not an mcptap capture")
        try:
            header = orjson.loads(first)
        except orjson.JSONDecodeError:
            self._fp.close()
            raise CaptureReadError(f"{path}:1: not an mcptap capture (first line is not JSON)") from None
        if not isinstance(header, dict) or header.get("type") != "header" or header.get("format") != FORMAT:
            self._fp.close()
            raise CaptureReadError(f"{path}:1: not an mcptap capture (no {FORMAT} header)")
        version = header.get("version")
        if not isinstance(version, int) or version < 1 or version > VERSION:
            self._fp.close()
            raise CaptureReadError(f"{path}: capture format version {version!r} is not supported (this mcptap reads 1..{VERSION}; upgrade mcptap)")
        self.version = version
        self.header = header
        self.truncated = False
        self.end: dict[str, Any] | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        fp = self._fp
        lineno = 1
        try:
            pending: bytes | None = None
            for line in fp:
                lineno += 1
                if pending is not None:
                    raise CaptureReadError(f"{self.path}:{lineno - 1}: corrupt record (not JSON)")
                try:
                    rec = orjson.loads(line)
                except orjson.JSONDecodeError:
                    pending = line
                    continue
                if not isinstance(rec, dict) or not isinstance(rec.get("type"), str):
                    raise CaptureReadError(f"{self.path}:{lineno}: record is not an object with a type")
                bad = _malformed(rec)
                if bad is not None:
                    raise CaptureReadError(f"{self.path}:{lineno}: corrupt {rec['type']} record: {bad}")
                if self.version != VERSION:
                    rec = _migrate(rec, self.version)
                if rec["type"] == "end":
                    self.end = rec
                yield rec
            if pending is not None:
                if pending.endswith(b"\n"):
                    raise CaptureReadError(f"{self.path}:{lineno}: corrupt record (not JSON)")
                self.truncated = True
        finally:
            fp.close()

    def close(self) -> None:
        self._fp.close()


_B64 = __import__("re").compile(r"[A-Za-z0-9+/]*={0,2}")


def _malformed(rec: dict[str, Any]) -> str | None:
    """What is wrong with a record's field types, or None (cheap checks, so
    consumers can trust them; peer bytes themselves are never judged here)."""
    seq = rec.get("seq")
    if seq is not None and (not isinstance(seq, int) or isinstance(seq, bool)):
        return f"seq {seq!r} is not an integer"
    t = rec.get("t_us")
    if t is not None and (not isinstance(t, int) or isinstance(t, bool)):
        return f"t_us {t!r} is not an integer"
    if rec["type"] == "message":
        if rec.get("dir") not in ("c2s", "s2c"):
            return f"dir {rec.get('dir')!r} is not c2s or s2c"
        if not isinstance(seq, int):
            return "message without seq"
        for key in ("raw", "raw_b64", "session", "method", "eol"):
            v = rec.get(key)
            if v is not None and not isinstance(v, str):
                return f"{key} is a {type(v).__name__}, not a string"
        if "raw_b64" in rec and (len(rec["raw_b64"]) % 4 or not _B64.fullmatch(rec["raw_b64"])):
            return "raw_b64 is not base64"
        if "raw" not in rec and "raw_b64" not in rec and "json" not in rec:
            return "neither json nor raw bytes"
        if not isinstance(rec.get("kind"), str):
            return "kind missing"
        f = rec.get("findings")
        if f is not None and not (isinstance(f, list) and all(isinstance(x, dict) and isinstance(x.get("code"), str) for x in f)):
            return "findings is not a list of {code, severity, message}"
    elif rec["type"] == "stderr":
        for key in ("data", "data_b64"):
            v = rec.get(key)
            if v is not None and not isinstance(v, str):
                return f"{key} is a {type(v).__name__}, not a string"
    return None


def read_capture(path: str) -> Capture:
    """Read a whole capture. Raises CaptureReadError."""
    stream = CaptureStream(path)
    records = list(stream)
    return Capture(stream.header, records, stream.end, stream.truncated, path)


def header_record(transport: str, target: dict[str, Any], started: str, version: str, **extra: Any) -> dict[str, Any]:
    """The header record. ``started``: ISO 8601 UTC start time (str)."""
    rec = {"type": "header", "format": FORMAT, "version": VERSION, "mcptap": version, "started": started,
           "transport": transport, "target": target}
    rec.update(extra)
    return rec
