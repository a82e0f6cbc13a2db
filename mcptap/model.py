"""Level-0 data model shared by every layer (stdlib only).

Terms follow JSON-RPC 2.0 and the MCP specification: a *message* is a JSON-RPC
request, notification or response; *direction* is client→server (``c2s``) or
server→client (``s2c``); a *frame* is the exact byte unit the transport cut from a
stream (one stdio line, one SSE event's data, one HTTP body).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Direction(enum.StrEnum):
    """Who sent the bytes: the client (host) or the server."""

    C2S = "c2s"
    S2C = "s2c"

    @property
    def peer(self) -> Direction:
        return _PEER[self]

    @property
    def sender(self) -> str:
        """``"client"`` or ``"server"``."""
        return "client" if self is Direction.C2S else "server"


#: each direction's other one (a table: reading members off their Enum class costs ~10x a dict read on Python 3.11)
_PEER = {Direction.C2S: Direction.S2C, Direction.S2C: Direction.C2S}


#: finding severities, most severe first (the order counts are written in)
SEVERITIES: tuple[str, ...] = ("error", "warn", "info")
#: THE severity ranking (info 0 < warn 1 < error 2), keyed by value: a Severity works too
SEVERITY_RANK: dict[str, int] = {"info": 0, "warn": 1, "error": 2}


def severity_counts() -> dict[str, int]:
    """``{"error": 0, "warn": 0, "info": 0}``: a counter per severity, most severe first."""
    return dict.fromkeys(SEVERITIES, 0)


class Severity(enum.StrEnum):
    """error = breaks a MUST of the negotiated revision or breaks real peers;
    warn = SHOULD or interoperability hazard; info = context."""

    ERROR = "error"
    WARN = "warn"
    INFO = "info"

    @property
    def rank(self) -> int:
        return SEVERITY_RANK[self.value]


class Kind(enum.StrEnum):
    """JSON-RPC classification of one payload (spec 2025-11-25 basic/index)."""

    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"          # result response
    ERROR = "error"                # error response
    BATCH = "batch"                # top-level JSON array (members classified separately)
    INVALID = "invalid"            # JSON, but not a JSON-RPC 2.0 message
    NON_JSON = "non_json"          # not JSON at all (banner, log line, blank line)


class Phase(enum.StrEnum):
    """Lifecycle phase a message was sent in (spec lifecycle pages).

    Stateful era (2024-11-05 … 2025-11-25): before_initialize → initializing
    (initialize sent, not answered) → initialized (answered, waiting for
    notifications/initialized) → operating → closing (a stream closed).
    Stateless era (2026-07-28): every message is ``stateless``.
    """

    BEFORE_INITIALIZE = "before_initialize"
    INITIALIZING = "initializing"
    INITIALIZED = "initialized"
    OPERATING = "operating"
    CLOSING = "closing"
    STATELESS = "stateless"


#: The short form ``show``'s timeline prints for a phase too wide for its column;
#: ``show --filter '~phase …'`` takes it as well as the full name.
PHASE_SHOWN: dict[str, str] = {Phase.BEFORE_INITIALIZE.value: "before_init"}

#: The name ``show``'s timeline prints in its kind column for each message ``kind``;
#: ``show --filter`` has an operator ``~NAME`` for each (filters/operators.py).
KIND_SHOWN: dict[str, str] = {"request": "req", "notification": "notif", "response": "resp", "error": "err", "batch": "batch",
                              "invalid": "inval", "non_json": "text"}


@dataclass(frozen=True, slots=True)
class Finding:
    """One annotation: ``code`` from docs/findings.md, its severity, a human
    sentence, and optional machine-readable ``data`` (JSON-compatible dict)."""

    code: str
    severity: Severity
    message: str
    data: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"code": self.code, "severity": self.severity.value, "message": self.message}
        if self.data:
            d["data"] = self.data
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Finding:
        return cls(d["code"], Severity(d["severity"]), d.get("message", ""), d.get("data"))


#: Sentinel for "this frame's bytes did not parse as JSON".
class _Unparsed:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNPARSED"

    def __bool__(self) -> bool:
        return False


UNPARSED: Any = _Unparsed()


@dataclass(slots=True)
class Frame:
    """One unit of bytes cut from a stream, with the result of parsing it.

    ``raw``: the exact bytes forwarded, terminator included (stdio: the line and
    its ``\\n``; a recovered multi-line message holds all its lines).
    ``offset``: byte offset of ``raw[0]`` in its direction's stream (int).
    ``terminated``: False when the stream ended before a newline.
    ``value``: the parsed JSON value, or UNPARSED.
    ``invalid_utf8``: byte offsets (within ``raw``) of undecodable bytes.
    ``lines``: how many newline-terminated lines ``raw`` spans (>1: multi-line JSON).
    ``oddities``: bit flags (``protocol.jsonparse``) of what only the exact
    parse reads: ``NON_FINITE`` (a number beyond any double, ``1e400``, reads as
    ±infinity in ``value``), ``LONE_SURROGATE`` (a lone surrogate escape reads
    as U+FFFD, except in an id, progress token or task id: ``jsonparse.parse_exact``);
    0 for the common case.
    """

    raw: bytes
    offset: int = 0
    terminated: bool = True
    value: Any = UNPARSED
    invalid_utf8: tuple[int, ...] = ()
    lines: int = 1
    oddities: int = 0


@dataclass(slots=True)
class Member:
    """Annotation of one member of a JSON-RPC batch array (same fields as Message)."""

    index: int
    kind: Kind
    id: Any = None
    method: str | None = None
    pair: int | None = None
    latency_us: int | None = None
    #: the protocol revision its checks used: members before a change in the same batch (2026-07-28's
    #: per-request ``_meta``, an ``initialize`` answer inside a batch) had another than the record's
    revision: str | None = None


@dataclass(slots=True)
class Message:
    """One annotated frame, as written to the capture's ``message`` record.

    ``seq``: global record number in the capture (int); ``t_us``: microseconds since
    capture start (monotonic, int); ``pair``: for a response, the seq of its
    request; ``latency_us``: response time minus request time (µs).
    ``value`` is the parsed JSON (UNPARSED for non-JSON); ``has_id`` tells an
    absent id from ``"id": null``. ``link``: for notifications/cancelled and
    notifications/progress, the seq of the request they refer to.
    """

    seq: int
    t_us: int
    direction: Direction
    raw: bytes
    value: Any
    kind: Kind
    session: str | None = None
    id: Any = None
    has_id: bool = False
    method: str | None = None
    pair: int | None = None
    latency_us: int | None = None
    phase: Phase | None = None
    revision: str | None = None
    findings: list[Finding] = field(default_factory=list)
    members: list[Member] | None = None
    link: int | None = None
    offset: int = 0
    terminated: bool = True
    transport: dict[str, Any] | None = None

    def add(self, code: str, severity: Severity, message: str, data: dict[str, Any] | None = None) -> None:
        self.findings.append(Finding(code, severity, message, data))

    @property
    def codes(self) -> list[str]:
        return [f.code for f in self.findings]
