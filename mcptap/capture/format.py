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

from typing import Any

from mcptap.model import Message
from mcptap.records import RAW_ONLY_ABOVE, Header, MessageRecord, annotation_json, decode_bytes, encode_bytes

__all__ = ["FORMAT", "MIGRATIONS", "RAW_ONLY_ABOVE", "VERSION", "annotation_record", "decode_bytes", "encode_bytes", "header_record",
           "message_from_record", "message_record", "migrate"]

FORMAT = "mcptap-capture"
VERSION = 1

#: the identifying and pairing fields of a message record (what check needs): records.annotation_json
annotation_record = annotation_json

# -- encoding: the record types own their JSON (mcptap/records/) -------------------

def message_record(msg: Message, eol: bytes = b"\n", canonical: bool = False, source: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``message`` record of one annotated Message (a dict ready for dumps):
    ``MessageRecord(msg, eol, canonical).to_json()``; ``source``: the record
    it was read from (re-annotation), whose fields no Message holds are kept
    (``MessageRecord.kept``: a scrubbed record's ``original``).

    ``eol``: the terminator the transport normally appends (``b"\\n"`` on stdio,
    ``b""`` for HTTP payloads); it decides whether ``json`` alone is lossless.
    ``canonical``: the caller knows ``raw == dumps(json) + eol`` (it rebuilt
    the bytes from ``json``), so the check is skipped.
    """
    out = MessageRecord(msg, eol, canonical).to_json()
    return out if source is None else MessageRecord.kept(out, source)


def message_from_record(rec: dict[str, Any]) -> Message:
    """Rebuild a Message (raw bytes exact) from a ``message`` record.
    Raises CaptureReadError if the record lacks its bytes or is malformed."""
    return MessageRecord.from_json(rec).message


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
