"""Capture records as types (h11's ``_events.py`` style): one small frozen
class per record type of docs/capture-format.md, each owning its JSON form.

Writers build a record object and write ``rec.to_json()``; the exact key order
of each record is fixed by its class, so captures stay byte-identical whoever
builds them. ``Cls.from_json(d)`` (or :func:`parse`, which dispatches on
``type``) is the inverse for readers that want the typed view; it raises
:class:`~mcptap.errors.CaptureReadError` naming the record's type and seq when
a field is missing or has the wrong type. Streaming readers on hot paths
(``check``) keep the dicts and use the field names documented here.

| type | class | module |
|---|---|---|
| header | :class:`Header` | ``records/header.py`` |
| message | :class:`MessageRecord` (an annotated ``model.Message`` + eol) | ``records/message.py`` |
| chunk, stderr, process, eof, context, http, note, gap | :class:`Chunk` … :class:`Gap` | ``records/events.py`` |
| end | :class:`End` | ``records/end.py`` |
"""

from __future__ import annotations

from typing import Any

from mcptap.errors import CaptureReadError
from mcptap.records.base import Findings, decode_bytes, encode_bytes
from mcptap.records.end import End
from mcptap.records.events import Chunk, Context, Eof, Gap, Http, Note, Process, Stderr
from mcptap.records.header import Header
from mcptap.records.message import RAW_ONLY_ABOVE, MessageRecord, annotation_json, message_bytes

__all__ = ["RAW_ONLY_ABOVE", "RECORD_TYPES", "Chunk", "Context", "Eof", "End", "Findings", "Gap", "Header", "Http", "MessageRecord",
           "Note", "Process", "Record", "Stderr", "annotation_json", "decode_bytes", "encode_bytes", "message_bytes", "parse"]

#: every record type of capture format v1, in docs/capture-format.md's order (a test keeps them in step)
RECORD_TYPES = ("header", "message", "chunk", "stderr", "process", "eof", "context", "http", "note", "gap", "end")

#: any typed record
Record = Header | MessageRecord | Chunk | Stderr | Process | Eof | Context | Http | Note | Gap | End

_CLASSES: dict[str, Any] = {"header": Header, "message": MessageRecord, "chunk": Chunk, "stderr": Stderr, "process": Process,
                            "eof": Eof, "context": Context, "http": Http, "note": Note, "gap": Gap, "end": End}


def parse(d: dict[str, Any]) -> Record:
    """The typed record of one capture line (a dict as read). Raises
    CaptureReadError for an unknown ``type`` or a malformed record."""
    cls = _CLASSES.get(str(d.get("type"))) if isinstance(d, dict) else None
    if cls is None:
        what = d.get("type") if isinstance(d, dict) else type(d).__name__
        raise CaptureReadError(f"record {what!r} is not a capture record type (one of {', '.join(RECORD_TYPES)})")
    rec: Record = cls.from_json(d)
    return rec
