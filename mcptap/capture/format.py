"""The capture format (JSONL, versioned): record encoding, header, migrations.

Documented in ``docs/capture-format.md``. One JSON object per line, UTF-8,
append-only. The first record is the ``header``; the last, when mcptap ended
normally, the ``end`` record. A message record keeps the exact forwarded bytes:
as ``json`` alone when ``orjson.dumps(json) + eol`` reproduces them (the
common case for SDK peers), else with ``raw`` (text) or ``raw_b64``.

Writing is :mod:`mcptap.capture.writer`, reading :mod:`mcptap.capture.reader`
(a truncated last line is reported, any other damage raises ``CaptureReadError``).
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

from mcptap.errors import CaptureReadError
from mcptap.model import UNPARSED, Direction, Finding, Kind, Member, Message, Phase
from mcptap.protocol.framing import LONG_DIGITS, exact_json
from mcptap.records import Header

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
    v: str | None = rec.get(key)
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
    elif "json" not in rec or LONG_DIGITS.search(raw):
        value = exact_json(raw)             # exact: a recorded json holds integers beyond 64 bits as floats
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


def header_record(transport: str, target: dict[str, Any], started: str, version: str, **extra: Any) -> dict[str, Any]:
    """The header record. ``started``: ISO 8601 UTC start time (str)."""
    return Header(FORMAT, VERSION, version, started, transport, target, extra).to_json()


#: version -> function upgrading a record of that version to version+1.
MIGRATIONS: dict[int, Any] = {}


def migrate(rec: dict[str, Any], version: int) -> dict[str, Any]:
    while version < VERSION:
        rec = MIGRATIONS[version](rec)
        version += 1
    return rec
