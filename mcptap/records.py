"""Capture records as types (level 0; h11's ``_events.py`` style): one small
class per record type, its JSON form in one place (docs/capture-format.md).

Writers build a record object and write ``rec.to_json()``; the exact key order
of each record is fixed here, so captures stay byte-identical whoever builds
them. ``RECORD_TYPES`` names every record type a capture may hold; readers keep
records as dicts (streaming, version migrations) and use the names here.

Message records carry the exact forwarded bytes and are built by
:func:`mcptap.capture.format.message_record` (they need the framing layer).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: every record type of capture format v1, in docs/capture-format.md's order (a test keeps them in step)
RECORD_TYPES = ("header", "message", "chunk", "stderr", "process", "eof", "context", "http", "note", "gap", "end")


@dataclass(frozen=True, slots=True)
class Header:
    """The first record: ``format`` and integer ``version`` of the capture
    format, the writing ``mcptap`` version, ``started`` (ISO 8601 UTC),
    ``transport`` ("stdio" or "http"), ``target`` (argv with secrets scrubbed,
    or the upstream URL), then ``extra`` keys in their given order (``rules``,
    ``name``, ``replay_of``…)."""

    format: str
    version: int
    mcptap: str
    started: str
    transport: str
    target: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "header", "format": self.format, "version": self.version, "mcptap": self.mcptap,
                             "started": self.started, "transport": self.transport, "target": self.target}
        d.update(self.extra)
        return d


@dataclass(frozen=True, slots=True)
class Record:
    """A record other than header, message and end: ``type``, ``seq``,
    ``t_us``, then its own fields in the order given, then ``findings``
    (JSON, omitted when empty)."""

    type: str
    seq: int
    t_us: int
    fields: dict[str, Any] = field(default_factory=dict)
    findings: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": self.type, "seq": self.seq, "t_us": self.t_us}
        d.update(self.fields)
        if self.findings:
            d["findings"] = list(self.findings)
        return d


@dataclass(frozen=True, slots=True)
class End:
    """The ``end`` record: per-direction counts and digests, findings by
    severity and code, requests still pending. Fields that are None are left
    out (a re-annotated cut-short capture has no byte counts); ``extra`` keys
    (exit code, replay error, ``incomplete``…) follow in their given order;
    ``capture_error``/``dropped_records`` come last (the writer failed)."""

    seq: int
    t_us: int
    severities: dict[str, int]
    codes: dict[str, int]
    pending: list[dict[str, Any]]
    c2s: dict[str, Any] | None = None
    s2c: dict[str, Any] | None = None
    cancelled_unanswered: list[dict[str, Any]] | None = None
    stderr: dict[str, Any] | None = None
    chunks: dict[str, int] | None = None
    unanswered: list[dict[str, Any]] | None = None
    exit_code: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    capture_error: str | None = None
    dropped_records: int | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "end", "seq": self.seq, "t_us": self.t_us}
        if self.c2s is not None and self.s2c is not None:
            d["c2s"] = self.c2s
            d["s2c"] = self.s2c
        d["severities"] = self.severities
        d["codes"] = dict(sorted(self.codes.items()))
        d["pending"] = self.pending
        for key in ("cancelled_unanswered", "stderr", "chunks", "unanswered", "exit_code"):
            v = getattr(self, key)
            if v is not None:
                d[key] = v
        d.update(self.extra)
        if self.capture_error is not None:
            d["capture_error"] = self.capture_error
            d["dropped_records"] = self.dropped_records
        return d
