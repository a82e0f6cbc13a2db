"""The records between header and end other than ``message``: what the tap
saw or did beside the framed messages (docs/capture-format.md). Each class
writes its JSON with ``type``, ``seq``, ``t_us`` first, then its own fields in
a fixed order, then ``findings`` (omitted when empty); ``from_json`` is its
inverse and raises CaptureReadError for a malformed record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcptap.records.base import Findings, encode_bytes, get_bytes, get_dir, get_findings, get_int, get_opt_int, get_str, malformed, put_findings, rest


@dataclass(frozen=True, slots=True)
class Chunk:
    """stdio bytes forwarded in ``dir`` that the live recorder stored unframed
    and unannotated (analysis fell behind); ``offset``: their first byte's
    offset in the direction's stream."""

    seq: int
    t_us: int
    dir: str
    offset: int
    data: bytes

    def to_json(self, encode: Callable[[bytes, str, dict[str, Any]], None] = encode_bytes) -> dict[str, Any]:
        """``encode``: stores ``data`` in the record (``encode_bytes``; the recorder
        passes ``capture.pieces.Deferred`` for bytes it writes in pieces)."""
        d: dict[str, Any] = {"type": "chunk", "seq": self.seq, "t_us": self.t_us, "dir": self.dir, "offset": self.offset}
        encode(self.data, "data", d)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Chunk:
        return cls(get_int(d, "seq"), get_int(d, "t_us"), get_dir(d), get_int(d, "offset", 0), get_bytes(d, "data"))


@dataclass(frozen=True, slots=True)
class Stderr:
    """One chunk of server stderr as passed through (stdio)."""

    seq: int
    t_us: int
    data: bytes
    findings: Findings = ()

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "stderr", "seq": self.seq, "t_us": self.t_us}
        encode_bytes(self.data, "data", d)
        return put_findings(d, self.findings)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Stderr:
        return cls(get_int(d, "seq"), get_int(d, "t_us"), get_bytes(d, "data"), get_findings(d))


@dataclass(frozen=True, slots=True)
class Process:
    """A server process event (``spawn``, ``signal``, ``exit``…) and its
    event-specific ``fields`` in their given order (docs/capture-format.md)."""

    seq: int
    t_us: int
    event: str
    fields: dict[str, Any] = field(default_factory=dict)
    findings: Findings = ()

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "process", "seq": self.seq, "t_us": self.t_us, "event": self.event}
        d.update(self.fields)
        return put_findings(d, self.findings)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Process:
        return cls(get_int(d, "seq"), get_int(d, "t_us"), get_str(d, "event"), rest(d, _PROCESS), get_findings(d))


_PROCESS = frozenset({"type", "seq", "t_us", "event", "findings"})


@dataclass(frozen=True, slots=True)
class Eof:
    """The stream ``dir`` closed (stdio); ``session``: the keyed segment it belonged to."""

    seq: int
    t_us: int
    dir: str
    session: str | None = None
    findings: Findings = ()

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "eof", "seq": self.seq, "t_us": self.t_us, "dir": self.dir}
        if self.session is not None:
            d["session"] = self.session
        return put_findings(d, self.findings)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Eof:
        session = d.get("session")
        return cls(get_int(d, "seq"), get_int(d, "t_us"), get_dir(d), None if session is None else get_str(d, "session"), get_findings(d))


@dataclass(frozen=True, slots=True)
class Context:
    """State assumed at capture start (the capture begins mid-session):
    ``phase``, ``revision``, ``session``, capabilities."""

    seq: int
    t_us: int
    state: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"type": "context", "seq": self.seq, "t_us": self.t_us, "state": self.state}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Context:
        state = d.get("state")
        if not isinstance(state, dict):
            raise malformed(d, "state is not an object")
        return cls(get_int(d, "seq"), get_int(d, "t_us"), state)


#: the answers the HTTP tap gives itself without forwarding the request (it never reached
#: the server): the ``how`` of the exchange's ``end`` record -> (status, reason) the client got.
#: The one list: the relay answers through it (``relay/http/conn_ends.py``), and everything
#: that tells a refused exchange from a forwarded one (show, diff, replay, HAR, the judge) reads it
TAP_REFUSALS: dict[str, tuple[int, str]] = {
    "host_rejected": (403, "Forbidden"),            # a Host that is not a loopback name (DNS rebinding)
    "request_rejected": (400, "Bad Request"),       # a request an intermediary must not forward (smuggling)
    "auth_not_fronted": (404, "Not Found"),         # a root-relative URL of an authorization server the tap does not front
}
#: ``end.how`` of an exchange the tap refused itself (``TAP_REFUSALS``' keys)
TAP_REFUSED = frozenset(TAP_REFUSALS)


@dataclass(frozen=True, slots=True)
class Http:
    """HTTP exchange facts (docs/http-tap.md): ``fields`` in their given order,
    ``event`` (request, response, sse, end, conn_close…) among them."""

    seq: int
    t_us: int
    fields: dict[str, Any]
    findings: Findings = ()

    @property
    def event(self) -> str:
        return str(self.fields.get("event"))

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "http", "seq": self.seq, "t_us": self.t_us}
        d.update(self.fields)
        return put_findings(d, self.findings)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Http:
        get_str(d, "event")
        return cls(get_int(d, "seq"), get_int(d, "t_us"), rest(d, _SEQ_T_FINDINGS), get_findings(d))


_SEQ_T_FINDINGS = frozenset({"type", "seq", "t_us", "findings"})


@dataclass(frozen=True, slots=True)
class Note:
    """Something mcptap did beside the relay (``source`` ``otlp``: the live
    export); ``fields`` in their given order. Notes carry no findings."""

    seq: int
    t_us: int
    source: str
    fields: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "note", "seq": self.seq, "t_us": self.t_us, "source": self.source}
        d.update(self.fields)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Note:
        return cls(get_int(d, "seq"), get_int(d, "t_us"), get_str(d, "source"), rest(d, _NOTE))


_NOTE = frozenset({"type", "seq", "t_us", "source"})


@dataclass(frozen=True, slots=True)
class Gap:
    """Something could not be recorded: ``reason``, and where known ``dir``
    and ``bytes`` (forwarded, not recorded). ``seq`` (and ``t_us``) are None
    in the writer's own gap after a failed write, which counts
    ``dropped_records``; ``truncated``: scrub dropped a source's cut last line."""

    seq: int | None
    t_us: int | None
    reason: str
    dir: str | None = None
    bytes: int | None = None
    dropped_records: int | None = None
    truncated: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    findings: Findings = ()

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "gap", "seq": self.seq}
        if self.t_us is not None:
            d["t_us"] = self.t_us
        if self.dir is not None:
            d["dir"] = self.dir
        if self.bytes is not None:
            d["bytes"] = self.bytes
        d["reason"] = self.reason
        if self.dropped_records is not None:
            d["dropped_records"] = self.dropped_records
        if self.truncated:
            d["truncated"] = True
        d.update(self.extra)
        return put_findings(d, self.findings)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Gap:
        return cls(get_opt_int(d, "seq"), get_opt_int(d, "t_us"), get_str(d, "reason", ""), None if d.get("dir") is None else get_dir(d),
                   get_opt_int(d, "bytes"), get_opt_int(d, "dropped_records"), d.get("truncated") is True, rest(d, _GAP), get_findings(d))


_GAP = frozenset({"type", "seq", "t_us", "dir", "bytes", "reason", "dropped_records", "truncated", "findings"})
