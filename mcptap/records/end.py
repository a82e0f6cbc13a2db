"""The ``end`` record: the last line when mcptap ended normally, built once
here for the live recorder and the offline re-annotator."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mcptap.protocol.jsonrpc import show_id
from mcptap.records.base import get_int, get_opt_int, malformed, rest

_SURROGATE = re.compile("[\ud800-\udfff]")

_OPTIONAL = ("cancelled_unanswered", "stderr", "chunks", "unanswered", "exit_code")
_KNOWN = frozenset({"type", "seq", "t_us", "c2s", "s2c", "severities", "codes", "pending", *_OPTIONAL, "capture_error", "dropped_records"})


#: what re-annotation computes afresh for its end record (``kept`` passes on every other field)
RECOMPUTED = frozenset({"type", "seq", "t_us", "c2s", "s2c", "severities", "codes", "pending", "cancelled_unanswered",
                        "stderr", "chunks", "unanswered", "incomplete"})


def says_ended(end: dict[str, Any] | None) -> bool:
    """Whether ``end`` (a capture's end record, or None) says the capture
    ended: False without one, and False for one marked ``incomplete: true``,
    which a transform writes for a capture that had none (``scrub`` of a
    recovered capture with chunk records: re-framed, re-annotated, the end
    record fresh); its counts and digests cover only the bytes the capture
    holds, and the capture is as incomplete as its source (``ls``, ``check``)."""
    return end is not None and end.get("incomplete") is not True


def kept(end: dict[str, Any] | None) -> dict[str, Any]:
    """The fields of a capture's ``end`` record that re-annotation keeps as they
    are (exit code, signal, writer failure, a scrubbed capture's ``original``,
    ``recorder_error`` and whatever else the tap said): all but ``RECOMPUTED``."""
    return {k: v for k, v in (end or {}).items() if k not in RECOMPUTED}


@dataclass(frozen=True, slots=True)
class End:
    """The ``end`` record: per-direction counts and digests, findings by
    severity and code, requests still pending. Fields that are None are left
    out; ``extra`` keys (exit code, replay error, ``incomplete``…) follow in
    their given order;
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
        d["pending"] = _writable(self.pending)
        for key in _OPTIONAL:
            v = getattr(self, key)
            if v is not None:
                d[key] = _writable(v) if key in ("unanswered", "cancelled_unanswered") else v
        d.update(self.extra)
        if self.capture_error is not None:
            d["capture_error"] = self.capture_error
            d["dropped_records"] = self.dropped_records
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> End:
        """Raises CaptureReadError for a field of the wrong type; absent
        counts read as empty."""
        severities, codes, pending = d.get("severities", {}), d.get("codes", {}), d.get("pending", [])
        if not isinstance(severities, dict) or not isinstance(codes, dict) or not isinstance(pending, list):
            raise malformed(d, "severities/codes must be objects and pending a list")
        for key in ("c2s", "s2c", "stderr", "chunks"):
            if not isinstance(d.get(key, {}), dict):
                raise malformed(d, f"{key} is not an object")
        error = d.get("capture_error")
        return cls(get_int(d, "seq"), get_int(d, "t_us"), severities, codes, pending, d.get("c2s"), d.get("s2c"),
                   d.get("cancelled_unanswered"), d.get("stderr"), d.get("chunks"), d.get("unanswered"),
                   get_opt_int(d, "exit_code"), rest(d, _KNOWN), None if error is None else str(error),
                   get_opt_int(d, "dropped_records"))


def _writable(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pending entries (``{seq, dir, id, method…}``), or findings whose ``data`` is
    one, as a record holds them: an id with a lone surrogate (kept exact in
    analysis) as U+FFFD, which orjson reads, and exact in ``id_text`` (every view
    shows that), as a message record's ``id``; other entries as they are."""
    out = entries
    for n, e in enumerate(entries):
        fixed = _entry(e) if isinstance(e, dict) else e
        if isinstance(e, dict) and isinstance(e.get("data"), dict):
            data = _entry(e["data"])
            fixed = e if data is e["data"] else dict(e, data=data)
        if fixed is not e:
            if out is entries:
                out = list(entries)
            out[n] = fixed
    return out


def _entry(e: dict[str, Any]) -> dict[str, Any]:
    rid = e.get("id")
    if type(rid) is not str or _SURROGATE.search(rid) is None:
        return e
    return dict(e, id=_SURROGATE.sub("\ufffd", rid), id_text=e.get("id_text") or show_id(rid))
