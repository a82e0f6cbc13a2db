"""The ``message`` record: one annotated frame the tap forwarded, with its
exact bytes (docs/capture-format.md). Its typed form is the annotated
:class:`~mcptap.model.Message` itself plus the stream's terminator."""

from __future__ import annotations

import re
from base64 import b64decode as _b64decode
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from mcptap.capture.dumps import dumps as _exact_dumps
from mcptap.errors import CaptureReadError
from mcptap.model import UNPARSED, Direction, Finding, Kind, Member, Message, Phase
from mcptap.protocol.jsonparse import LONG_DIGITS, exact_json
from mcptap.protocol.jsonrpc import show_id
from mcptap.records.base import decode_bytes, encode_bytes, get_findings, malformed

#: Messages larger than this are stored as raw bytes only (no ``json``): the
#: bytes are the truth, and a 16 MiB message is not encoded twice. Readers
#: parse ``raw`` when ``json`` is absent.
RAW_ONLY_ABOVE = 1 << 20

_dumps = orjson.dumps
_SURROGATE = re.compile("[\ud800-\udfff]")


def annotation_json(msg: Message, findings: bool = False) -> dict[str, Any]:
    """The identifying and pairing fields of a ``message`` record (type, seq,
    t_us, dir, kind, session, id, method, pair, latency_us), plus the findings
    when ``findings``: what annotation-only consumers (check) need, and the
    first keys of every message record."""
    rec: dict[str, Any] = {"type": "message", "seq": msg.seq, "t_us": msg.t_us, "dir": msg.direction._value_, "kind": msg.kind._value_}
    if msg.session is not None:
        rec["session"] = msg.session
    if msg.has_id:
        rec["id"] = msg.id
        if msg.findings and type(msg.id) is str and _SURROGATE.search(msg.id):
            # orjson (every reader's) reads no lone surrogate: U+FFFD here, exact in the raw
            # bytes (``exact_id``), and as every view shows it in ``id_text``, as a pending entry has it
            rec["id"] = _SURROGATE.sub("\ufffd", msg.id)
            rec["id_text"] = show_id(msg.id)
    if msg.method is not None:
        rec["method"] = msg.method
    if msg.pair is not None:
        rec["pair"] = msg.pair
        rec["latency_us"] = msg.latency_us
    if findings and msg.findings:
        rec["findings"] = [f.to_json() for f in msg.findings]
    return rec


def message_bytes(rec: dict[str, Any], eol: str = "\n") -> bytes | None:
    """The exact forwarded bytes of a ``message`` record (a dict as read):
    ``raw``/``raw_b64``, else ``dumps(json) + eol`` (the record's ``eol``,
    ``eol`` when absent); None when it holds neither. A ``json`` orjson
    refuses (an integer beyond 64 bits read by the stdlib, nesting deeper than
    254 levels: a hand-edited record) is encoded exactly all the same. No
    Message is built: cheap enough for streaming readers, and the one way
    check's fast scans (check/scan.py, check/full_tally.py) and the reference
    integrity check (capture/integrity.py) rebuild a stream's bytes."""
    # decode_bytes inlined, and the usual eol a constant: check's scans call this per message
    raw: str | None = rec.get("raw")
    if raw is not None:
        return raw.encode("utf-8")
    b64 = rec.get("raw_b64")
    if b64 is not None:
        return _b64decode(b64)
    if "json" not in rec:
        return None
    end = rec.get("eol", eol)
    tail = b"\n" if end == "\n" else str(end).encode("utf-8")
    try:
        return _dumps(rec["json"]) + tail
    except (TypeError, orjson.JSONEncodeError):
        return _exact_dumps(rec["json"]) + tail


#: the fields a message record's Message gives it (``MessageRecord.to_json``): what
#: re-annotation recomputes; any other field of a record read (a scrubbed record's
#: ``original``, a newer mcptap's) is the record's own and is kept (``MessageRecord.kept``)
MESSAGE_FIELDS = frozenset({"type", "seq", "t_us", "dir", "kind", "session", "id", "id_text", "method", "pair", "latency_us", "phase",
                            "rev", "json", "raw", "raw_b64", "eol", "findings", "link", "members", "transport", "offset"})


# not frozen, unlike the other records: the live recorder builds one per
# message, and a frozen dataclass's __init__ (object.__setattr__ per field)
# costs 0.4 µs more; nothing mutates it
@dataclass(slots=True)
class MessageRecord:
    """One ``message`` record: the annotated ``message`` (raw bytes exact) and
    ``eol``, the terminator the transport normally appends (``b"\\n"`` on
    stdio, ``b""`` for HTTP payloads), which decides whether ``json`` alone
    reproduces the bytes. ``canonical``: the writer knows ``raw ==
    dumps(json) + eol`` (it rebuilt the bytes from ``json``), so the check is
    skipped (not part of the record)."""

    message: Message
    eol: bytes = b"\n"
    canonical: bool = False

    @property
    def seq(self) -> int:
        return self.message.seq

    @property
    def t_us(self) -> int:
        return self.message.t_us

    def to_json(self, encode: Callable[[bytes, str, dict[str, Any]], None] = encode_bytes) -> dict[str, Any]:
        """Key order: the annotation keys, phase, rev, json, raw/raw_b64, eol,
        findings, link, members, transport, offset. ``encode``: stores the raw
        bytes in the record (``encode_bytes``; the recorder passes
        ``capture.pieces.Deferred`` for a payload it writes in pieces)."""
        msg = self.message
        rec = annotation_json(msg)
        phase = msg.phase
        if phase is not None:
            rec["phase"] = phase._value_
        if msg.revision is not None:
            rec["rev"] = msg.revision
        value = msg.value
        raw = msg.raw
        eol = self.eol
        if value is UNPARSED or len(raw) > RAW_ONLY_ABOVE:
            encode(raw, "raw", rec)
        elif self.canonical:
            rec["json"] = value
        else:
            try:
                dumped = _dumps(value)
            except (TypeError, orjson.JSONEncodeError):
                encode(raw, "raw", rec)
            else:
                rec["json"] = value
                # compared in place: no copy of a 16 MiB message just to check it
                if len(raw) != len(dumped) + len(eol) or not raw.startswith(dumped) or not raw.endswith(eol):
                    encode(raw, "raw", rec)
        if eol != b"\n":
            rec["eol"] = eol.decode("ascii")
        findings = msg.findings
        if findings:
            rec["findings"] = [f.to_json() for f in findings]
        if msg.link is not None:
            rec["link"] = msg.link
        if msg.members is not None:
            rec["members"] = [_member_json(m, msg.revision) for m in msg.members]
        if msg.transport:
            rec["transport"] = msg.transport
        rec["offset"] = msg.offset
        return rec

    @staticmethod
    def kept(out: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
        """``out`` (a record built afresh from ``source``'s Message) with the
        fields of ``source`` that no Message holds (not ``MESSAGE_FIELDS``), after
        its own, in their order (``original`` thus right after ``offset``)."""
        for k, v in source.items():
            if k not in MESSAGE_FIELDS:
                out[k] = v
        return out

    @classmethod
    def from_json(cls, rec: dict[str, Any]) -> MessageRecord:
        """Rebuild the annotated Message (raw bytes exact: ``raw``/``raw_b64``,
        else ``dumps(json) + eol``; ``json`` parsed from the bytes when absent).
        Raises CaptureReadError for a record without its bytes or with a
        malformed field."""
        try:
            raw = decode_bytes(rec, "raw")
            eol = rec.get("eol", "\n").encode("ascii")
        except (ValueError, AttributeError) as exc:
            raise malformed(rec, f"bad raw_b64 or eol ({exc})") from None
        value: Any = rec.get("json", UNPARSED)
        if raw is None:
            if "json" not in rec:
                raise CaptureReadError(f"message record seq {rec.get('seq')} has neither json nor raw bytes")
            try:
                raw = _dumps(value) + eol
            except (TypeError, orjson.JSONEncodeError):   # an integer beyond 64 bits read by the stdlib, 255+ levels
                raw = _exact_dumps(value) + eol
        elif "json" not in rec or LONG_DIGITS.search(raw):
            value = exact_json(raw)             # exact: a recorded json holds integers beyond 64 bits as floats
        try:
            members = None
            if "members" in rec:
                members = [Member(m["index"], Kind(m["kind"]), m.get("id"), m.get("method"), m.get("pair"), m.get("latency_us"),
                                  m.get("rev", rec.get("rev"))) for m in rec["members"]]
                if type(value) is list:
                    for m in members:
                        if 0 <= m.index < len(value):
                            m.id = exact_id(m.id, value[m.index])
            msg = Message(
                seq=rec["seq"], t_us=rec["t_us"], direction=Direction(rec["dir"]), raw=raw, value=value,
                kind=Kind(rec["kind"]), session=rec.get("session"), id=exact_id(rec.get("id"), value), has_id="id" in rec,
                method=rec.get("method"), pair=rec.get("pair"), latency_us=rec.get("latency_us"),
                phase=Phase(rec["phase"]) if rec.get("phase") else None, revision=rec.get("rev"),
                findings=[Finding.from_json(f) for f in get_findings(rec)], members=members,
                offset=rec.get("offset", 0), transport=rec.get("transport"), link=rec.get("link"),
            )
        except (KeyError, ValueError, TypeError) as exc:
            raise malformed(rec, str(exc)) from None
        return cls(msg, eol)


#: a lone UTF-16 surrogate escape in JSON text (``\\ud800``; an escaped backslash before it is rare enough to be read again)
_LONE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def exact_payload(rec: dict[str, Any]) -> Any:
    """The payload of a message record as the peer wrote it, lone surrogates
    kept (``"\\ud800"`` as ``"\ud800"``: in a method name, a URI, a tool name),
    when its raw bytes hold a lone surrogate escape; None otherwise (the record's
    ``json``/``id``/``method`` are exact then). Read by the stdlib parser,
    which keeps them (orjson, the tap's, reads them as U+FFFD). For views and
    exports: analysis reads ids exactly already (``exact_id``)."""
    raw = rec.get("raw")
    if not isinstance(raw, str) or "\\u" not in raw or _LONE_ESCAPE.search(raw.encode("utf-8")) is None:
        return None
    import json

    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if _has_lone(value) else None


def _has_lone(v: Any) -> bool:
    stack = [v]
    while stack:
        x = stack.pop()
        if type(x) is str:
            if _SURROGATE.search(x):
                return True
        elif type(x) is dict:
            stack += x.keys()
            stack += x.values()
        elif type(x) is list:
            stack += x
    return False


def exact_id(rid: Any, value: Any) -> Any:
    """A record's ``id`` as the peer sent it: a string id with a lone
    surrogate (``"\\ud800"``) is stored as U+FFFD in the record's ``id``
    (its readers use orjson, which reads no lone surrogate), the exact one
    is the payload's (``value``, parsed from the raw bytes)."""
    if type(rid) is str and "\ufffd" in rid and type(value) is dict:
        exact = value.get("id")
        if type(exact) is str and exact != rid and _SURROGATE.sub("\ufffd", exact) == rid:
            return exact
    return rid


def _member_json(m: Member, rev: str | None) -> dict[str, Any]:
    d: dict[str, Any] = {"index": m.index, "kind": m.kind.value}
    if m.id is not None:
        if type(m.id) is str and _SURROGATE.search(m.id) is not None:
            d["id"], d["id_text"] = _SURROGATE.sub("\ufffd", m.id), show_id(m.id)
        else:
            d["id"] = m.id
    if m.method is not None:
        d["method"] = m.method
    if m.pair is not None:
        d["pair"] = m.pair
        d["latency_us"] = m.latency_us
    if m.revision != rev:
        d["rev"] = m.revision         # judged under another revision than the batch record's (``rev``, its last member's); null: none yet
    return d
